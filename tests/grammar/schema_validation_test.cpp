// 200 random JSON Schemas x (greedy, sampled) on stories260K (a model that never writes JSON by
// itself): every finished output must parse and validate against its schema, checked by an
// independent validator (Debian's python3-jsonschema, tests/grammar/validate_outputs.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "tests/grammar/constrained_run.h"
#include "tests/grammar/random_schema.h"

namespace vks::test {
namespace {

TEST(SchemaValidation, RandomSchemasGreedyAndSampledValidate) {
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-jsonschema is not installed";
  }
  ModelFixture fixture;
  auto engine = fixture.engine(32);
  std::mt19937 rng(20261125);
  std::vector<nlohmann::json> schemas;
  std::vector<GenerateRequest> reqs;
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom", "The dog", "One day"};
  for (int i = 0; i < 200; ++i) {
    schemas.push_back(random_schema(rng));
    for (int sampled = 0; sampled < 2; ++sampled) {
      GenerateRequest r = constrained(prompts[static_cast<size_t>(i) % prompts.size()], sampled ? 0.8f : 0.0f, 160,
                                      static_cast<uint64_t>(i));
      r.json_schema = schemas.back().dump();
      reqs.push_back(std::move(r));
    }
  }
  const auto outs = fixture.run(*engine, reqs);
  ASSERT_EQ(outs.size(), reqs.size());
  const std::string path = testing::TempDir() + "constrained_outputs.jsonl";
  int finished = 0;
  {
    std::ofstream f(path);
    for (size_t i = 0; i < outs.size(); ++i) {
      EXPECT_TRUE(outs[i].error.empty()) << outs[i].error << "\nschema: " << reqs[i].json_schema;
      const bool done = outs[i].reason == FinishReason::kStop;
      finished += done;
      nlohmann::json rec = {{"schema", schemas[i / 2]}, {"output", outs[i].text}, {"finished", done}};
      f << rec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  }
  // Most outputs must finish within max_tokens, or the check below proves little.
  EXPECT_GE(finished, 300) << "finished " << finished << " of " << outs.size();
  const std::string cmd = "/usr/bin/python3 " + std::string(VKS_GRAMMAR_DIR) + "/validate_outputs.py " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string report;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) report.append(buf, n);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << report;
  EXPECT_NE(report.find("validated " + std::to_string(finished) + " of 400"), std::string::npos) << report;
}

}  // namespace
}  // namespace vks::test
