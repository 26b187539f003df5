// The catalogue of servable models: names from model dirs and the pull cache, which copy of a name
// wins, what is skipped (partial downloads, other files, missing dirs), and how requests match names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/model_catalog.h"

namespace {

namespace fs = std::filesystem;
using vks::store::CatalogModel;
using vks::store::find_servable_model;
using vks::store::scan_servable_models;

// A fresh temp dir per test, removed afterwards.
class ModelCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("vks-catalog-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string touch(const std::string& relative, const std::string& content = "gguf") {
    const fs::path p = root_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }
  std::string dir(const std::string& relative) const { return (root_ / relative).string(); }

  static std::vector<std::string> names(const std::vector<CatalogModel>& models) {
    std::vector<std::string> out;
    for (const CatalogModel& m : models) out.push_back(m.name);
    return out;
  }

  fs::path root_;
};

TEST_F(ModelCatalog, NamesDirModelsByStemSkippingOtherFilesAndSubdirs) {
  const std::string path = touch("a/stories260K.gguf", "12345");
  touch("a/notes.txt");
  touch("a/half.gguf.part");
  touch("a/sub/nested.gguf");  // only files directly in a dir are served
  fs::create_directories(root_ / "a/dir.gguf");  // a directory named like a model is not one
  const std::vector<CatalogModel> models = scan_servable_models({dir("a")}, "");
  ASSERT_EQ(names(models), std::vector<std::string>{"stories260K"});
  EXPECT_EQ(models[0].path, path);
  EXPECT_EQ(models[0].size_bytes, 5u);
  EXPECT_FALSE(models[0].pulled);
  EXPECT_GT(models[0].mtime_unix, 1600000000);  // a real timestamp, not left at 0
}

TEST_F(ModelCatalog, FirstDirWinsADuplicateNameAndTheResultIsSorted) {
  const std::string first = touch("one/m.gguf", "1");
  touch("two/m.gguf", "22");
  touch("two/b.gguf");
  touch("one/z.gguf");
  const std::vector<CatalogModel> models = scan_servable_models({dir("one"), dir("two")}, "");
  ASSERT_EQ(names(models), (std::vector<std::string>{"b", "m", "z"}));
  EXPECT_EQ(models[1].path, first);
  // Reversed order, the other copy wins.
  const std::vector<CatalogModel> reversed = scan_servable_models({dir("two"), dir("one")}, "");
  EXPECT_EQ(reversed[1].path, dir("two") + "/m.gguf");
}

TEST_F(ModelCatalog, NamesPulledModelsAsTheyWerePulled) {
  touch("cache/TheBloke/Tiny-GGUF/tiny.Q4_K_M.gguf");
  touch("cache/TheBloke/Tiny-GGUF/tiny.Q8_0.gguf");
  touch("cache/TheBloke/Tiny-GGUF/tiny.Q2_K.gguf.part");  // a partial download
  touch("cache/o/plain/model.gguf");                        // no quant tag
  touch("cache/o/twins/a.Q4_0.gguf");                       // one tag, two files: not unique
  touch("cache/o/twins/b.Q4_0.gguf");
  touch("cache/fromurl.gguf");                              // pulled from a URL
  const std::vector<CatalogModel> models = scan_servable_models({}, dir("cache"));
  EXPECT_EQ(names(models), (std::vector<std::string>{"TheBloke/Tiny-GGUF:Q4_K_M", "TheBloke/Tiny-GGUF:Q8_0",
                                                     "fromurl", "o/plain/model", "o/twins/a.Q4_0", "o/twins/b.Q4_0"}));
  for (const CatalogModel& m : models) EXPECT_TRUE(m.pulled) << m.name;
  EXPECT_EQ(models[0].path, dir("cache") + "/TheBloke/Tiny-GGUF/tiny.Q4_K_M.gguf");
}

TEST_F(ModelCatalog, DirsComeBeforeTheCacheForTheSameName) {
  const std::string local = touch("dir/fromurl.gguf");
  touch("cache/fromurl.gguf");
  const std::vector<CatalogModel> models = scan_servable_models({dir("dir")}, dir("cache"));
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].path, local);
  EXPECT_FALSE(models[0].pulled);
}

TEST_F(ModelCatalog, MissingAndUnreadableDirsAreSkipped) {
  touch("ok/m.gguf");
  touch("locked/hidden.gguf");
  fs::permissions(root_ / "locked", fs::perms::none);
  std::vector<CatalogModel> models;
  ASSERT_NO_THROW(models = scan_servable_models({dir("missing"), dir("locked"), "", dir("ok")}, dir("no-cache")));
  fs::permissions(root_ / "locked", fs::perms::owner_all);
  // root can read a mode-000 dir: accept its model there, but never an exception or a lost "m".
  std::vector<std::string> got = names(models);
  std::erase(got, "hidden");
  EXPECT_EQ(got, std::vector<std::string>{"m"});
  EXPECT_TRUE(scan_servable_models({}, "").empty());
}

TEST_F(ModelCatalog, MatchesExactNameLatestFileNameAndPath) {
  const std::string path = touch("d/stories260K.gguf");
  touch("d/stories260K-instruct.gguf");
  const std::vector<CatalogModel> models = scan_servable_models({dir("d")}, "");
  for (const std::string& form : {std::string("stories260K"), std::string("stories260K:latest"),
                                  std::string("stories260K.gguf"), path}) {
    const auto m = find_servable_model(models, form);
    ASSERT_TRUE(m.has_value()) << form;
    EXPECT_EQ(m->path, path) << form;
  }
  for (const char* miss : {"", "stories260k", "stories", "stories260K:v2", "d/stories260K.gguf", "other"}) {
    EXPECT_FALSE(find_servable_model(models, miss).has_value()) << miss;
  }
}

TEST_F(ModelCatalog, MatchesPulledModelsByTheFormsResolveAccepts) {
  const std::string q4 = touch("cache/o/r/m.Q4_K_M.gguf");
  touch("cache/o/r/m.Q8_0.gguf");
  const std::string only = touch("cache/o/single/x.Q5_K_M.gguf");
  const std::vector<CatalogModel> models = scan_servable_models({}, dir("cache"));
  const auto path_of = [&](const std::string& requested) {
    const auto m = find_servable_model(models, requested);
    return m ? m->path : std::string("<none>");
  };
  EXPECT_EQ(path_of("o/r:Q4_K_M"), q4);
  EXPECT_EQ(path_of("o/r/m.Q4_K_M.gguf"), q4);
  EXPECT_EQ(path_of("o/r/m.Q4_K_M"), q4);
  EXPECT_EQ(path_of("m.Q4_K_M.gguf"), q4);
  EXPECT_EQ(path_of("o/single"), only);         // the repo's only model
  EXPECT_EQ(path_of("o/single:latest"), only);
  EXPECT_EQ(path_of("o/r"), "<none>");          // two quants: ambiguous
  EXPECT_EQ(path_of("o/r:q4_k_m"), q4);         // a quant in any case, as --model and `vkstream pull` take it
  EXPECT_EQ(path_of("o/r:Q4_K"), "<none>");     // a whole quant word only
  EXPECT_EQ(path_of("o/r:Q2_K"), "<none>");
}

TEST_F(ModelCatalog, AnExactNameBeatsALooserFormOfAnotherModel) {
  // "b.gguf" is model b's file name, and also the exact name of the model in b.gguf.gguf.
  touch("d/b.gguf");
  const std::string exact = touch("d/b.gguf.gguf");
  const std::vector<CatalogModel> models = scan_servable_models({dir("d")}, "");
  const auto m = find_servable_model(models, "b.gguf");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->path, exact);
}

}  // namespace
