// The pure pieces of `vkstream pull` and the model cache: SHA-256, SOURCE parsing, choosing the
// file from a Hugging Face listing (also hostile listings), and resolving --model names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "store/model_cache.h"
#include "store/pull_source.h"
#include "store/sha256.h"
#include "engine/common/error.h"

namespace {

namespace fs = std::filesystem;
using vks::store::PullPlan;
using vks::store::PullSource;

TEST(Sha256, MatchesFipsVectors) {
  vks::store::Sha256 empty;
  EXPECT_EQ(empty.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  vks::store::Sha256 abc;
  abc.update("abc");
  EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  vks::store::Sha256 two_blocks;
  two_blocks.update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(two_blocks.hex_digest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a' fed in uneven pieces.
  vks::store::Sha256 million;
  const std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, chunk.size());
    million.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(million.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(PullSource, ParsesUrlsAndRepos) {
  const PullSource url = vks::store::parse_pull_source("https://example.com/m/x.Q4_0.gguf?download=1");
  EXPECT_TRUE(url.is_url);
  EXPECT_EQ(vks::store::plan_for_url(url).cache_name, "x.Q4_0.gguf");
  const PullSource repo = vks::store::parse_pull_source("TheBloke/TinyLlama-1.1B-GGUF:Q4_K_M");
  EXPECT_FALSE(repo.is_url);
  EXPECT_EQ(repo.owner, "TheBloke");
  EXPECT_EQ(repo.repo, "TinyLlama-1.1B-GGUF");
  EXPECT_EQ(repo.quant, "Q4_K_M");
  EXPECT_EQ(vks::store::parse_pull_source("a/b").quant, "");
  // Ollama's spelling of a Hugging Face model (what its front ends send to /api/pull).
  const PullSource hf = vks::store::parse_pull_source("hf.co/TheBloke/TinyLlama-1.1B-GGUF:Q8_0");
  EXPECT_EQ(hf.owner, "TheBloke");
  EXPECT_EQ(hf.repo, "TinyLlama-1.1B-GGUF");
  EXPECT_EQ(hf.quant, "Q8_0");
  EXPECT_EQ(vks::store::parse_pull_source("huggingface.co/a/b:latest").quant, "");
  EXPECT_EQ(vks::store::parse_pull_source("hf.co/a/b").repo, "b");
  for (const char* bad : {"", "a", "a/b/c", "a/b:", "../x/y", "a/..", "a b/c", "a/b:Q4 K", "ftp://x/y.gguf", "hf.co/a",
                          "llama3.2:latest", "hf.co/"}) {
    EXPECT_THROW(vks::store::parse_pull_source(bad), vks::Error) << bad;
  }
  EXPECT_THROW(vks::store::plan_for_url(vks::store::parse_pull_source("https://example.com/")), vks::Error);
  EXPECT_THROW(vks::store::plan_for_url(vks::store::parse_pull_source("https://example.com/model.bin")), vks::Error);
}

TEST(PullSource, ChoosesTheQuantFromTheListing) {
  const std::string listing = R"({"siblings": [
      {"rfilename": "README.md"},
      {"rfilename": "m.Q4_K_M.gguf", "size": 10, "lfs": {"sha256": "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789", "size": 10}},
      {"rfilename": "m.Q4_K_S.gguf", "size": 9},
      {"rfilename": "m.Q8_0.gguf", "size": 20},
      {"rfilename": "sub/m.F16.gguf", "size": 30}]})";
  const PullPlan def = vks::store::plan_for_hf_listing(vks::store::parse_pull_source("o/r"), listing, "http://h");
  EXPECT_EQ(def.url, "http://h/o/r/resolve/main/m.Q4_K_M.gguf");
  EXPECT_EQ(def.cache_name, "o/r/m.Q4_K_M.gguf");
  ASSERT_TRUE(def.size_bytes.has_value());
  EXPECT_EQ(*def.size_bytes, 10u);
  EXPECT_EQ(def.sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  const PullPlan q8 = vks::store::plan_for_hf_listing(vks::store::parse_pull_source("o/r:q8_0"), listing, "http://h");
  EXPECT_EQ(q8.cache_name, "o/r/m.Q8_0.gguf");
  EXPECT_EQ(q8.sha256, "");
  try {
    vks::store::plan_for_hf_listing(vks::store::parse_pull_source("o/r:Q5_K_M"), listing, "http://h");
    FAIL() << "no Q5_K_M";
  } catch (const vks::Error& e) {
    EXPECT_EQ(e.code(), vks::ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("Q4_K_M, Q4_K_S, Q8_0"), std::string::npos) << e.what();
  }
}

TEST(PullSource, HostileListingsGiveErrorsNotCrashes) {
  const PullSource src = vks::store::parse_pull_source("o/r");
  for (const char* bad : {"", "[]", "{}", "{\"siblings\": 3}", "{\"siblings\": [1, null, {\"rfilename\": 5}]}",
                          "{\"siblings\": [{\"rfilename\": \"../../etc/x.gguf\"}]}", "{\"siblings\": [", "\xff\xfe"}) {
    EXPECT_THROW(vks::store::plan_for_hf_listing(src, bad, "http://h"), vks::Error) << bad;
  }
  std::mt19937 rng(7);
  const std::string seed = R"({"siblings": [{"rfilename": "m.Q4_K_M.gguf", "size": 10, "lfs": {"sha256": "00", "size": 10}}]})";
  for (int i = 0; i < 2000; ++i) {
    std::string s = seed;
    for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    try {
      const PullPlan p = vks::store::plan_for_hf_listing(src, s, "http://h");
      EXPECT_EQ(p.cache_name.find(".."), std::string::npos);
    } catch (const vks::Error&) {
    }
  }
}

TEST(ModelCache, QuantTagsMatchWholeWords) {
  EXPECT_TRUE(vks::store::file_has_quant("x.Q4_K_M.gguf", "q4_k_m"));
  EXPECT_TRUE(vks::store::file_has_quant("x-Q4_K.gguf", "Q4_K"));
  EXPECT_FALSE(vks::store::file_has_quant("x.Q4_K_M.gguf", "Q4_K"));
  EXPECT_FALSE(vks::store::file_has_quant("x.IQ4_K.gguf", "Q4_K"));
  EXPECT_FALSE(vks::store::file_has_quant("x.gguf", ""));
}

TEST(ModelCache, ResolvesPathsCachedNamesAndPulledRepos) {
  const fs::path dir = fs::temp_directory_path() / ("vks-cache-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "o/r");
  for (const char* f : {"o/r/m.Q4_K_M.gguf", "o/r/m.Q8_0.gguf", "plain.gguf", "o/r/m.Q2_K.gguf.part"}) {
    std::ofstream(dir / f) << "x";
  }
  const std::string d = dir.string();
  EXPECT_EQ(vks::store::resolve_model_name("plain", d), d + "/plain.gguf");
  EXPECT_EQ(vks::store::resolve_model_name("plain.gguf", d), d + "/plain.gguf");
  EXPECT_EQ(vks::store::resolve_model_name("o/r:q8_0", d), d + "/o/r/m.Q8_0.gguf");
  EXPECT_EQ(vks::store::resolve_model_name("o/r/m.Q4_K_M.gguf", d), d + "/o/r/m.Q4_K_M.gguf");
  EXPECT_EQ(vks::store::resolve_model_name((dir / "plain.gguf").string(), "/nonexistent"), d + "/plain.gguf");
  EXPECT_FALSE(vks::store::resolve_model_name("o/r:Q2_K", d).has_value());  // only a partial download
  EXPECT_FALSE(vks::store::resolve_model_name("missing", d).has_value());
  EXPECT_FALSE(vks::store::resolve_model_name("../etc/passwd", d).has_value());
  EXPECT_THROW(vks::store::resolve_model_name("o/r", d), vks::Error);  // two quants cached

  const std::vector<vks::store::CachedModel> listed = vks::store::list_cached_models(d);
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].name, "o/r/m.Q4_K_M.gguf");
  EXPECT_EQ(listed[2].name, "plain.gguf");
  EXPECT_EQ(listed[2].size_bytes, 1u);
  fs::remove_all(dir);
}

}  // namespace
