#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "protocol/stats.h"
#include "protocol/topic.h"

namespace vks::proto {
namespace {

TEST(Histogram, BucketsAndPercentiles) {
  std::vector<double> samples;
  for (int k = 1; k <= 100; ++k) samples.push_back(k);  // 1..100 ms
  samples.push_back(-1);                                 // ignored
  const Histogram h = make_histogram(samples);
  EXPECT_EQ(h.count, 100u);
  EXPECT_DOUBLE_EQ(h.sum, 5050);
  EXPECT_DOUBLE_EQ(h.p50, 50);
  EXPECT_DOUBLE_EQ(h.p90, 90);
  EXPECT_DOUBLE_EQ(h.p99, 99);
  ASSERT_EQ(h.bounds.size(), h.cumulative.size());
  for (size_t k = 0; k < h.bounds.size(); ++k) {
    const double b = h.bounds[k];
    EXPECT_EQ(h.cumulative[k], static_cast<uint64_t>(std::min(100.0, std::floor(b)))) << b;
    if (k > 0) {
      EXPECT_GE(h.cumulative[k], h.cumulative[k - 1]);
    }
  }
  const Histogram empty = make_histogram({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99, 0);
}

TEST(Prometheus, WellFormedExposition) {
  StatsSnapshot snap;
  snap.waiting = 3;
  snap.kv_blocks_total = 10;
  snap.kv_blocks_used = 5;
  snap.kv_usage = 0.5;
  snap.kv_pools = {KvPoolSnapshot{"full", 1, 0, 10, 5, 0, 20480, 10240},
                   KvPoolSnapshot{"window", 5, 8, 4, 3, 1, 40960, 30720}};
  const double ttft[] = {4, 40, 400};
  snap.ttft_ms = make_histogram(ttft);
  snap.itl_ms = make_histogram({});
  snap.server.connections = 2;
  const std::string text = render_prometheus(snap);
  std::istringstream in(text);
  std::string line;
  std::set<std::string> typed;
  int samples = 0;
  while (std::getline(in, line)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream l(line.substr(7));
      std::string name, kind;
      l >> name >> kind;
      EXPECT_TRUE(kind == "gauge" || kind == "counter" || kind == "histogram") << line;
      EXPECT_TRUE(typed.insert(name).second) << "duplicate TYPE " << name;
      continue;
    }
    if (line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind("vkstream_", 0), 0u) << line;
    std::string base = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string suf(suffix);
      if (base.size() > suf.size() && base.compare(base.size() - suf.size(), suf.size(), suf) == 0 && !typed.count(base))
        base = base.substr(0, base.size() - suf.size());
    }
    EXPECT_TRUE(typed.count(base)) << "sample before its TYPE: " << line;
    ++samples;
  }
  EXPECT_GT(samples, 20);
  EXPECT_NE(text.find("vkstream_requests_waiting 3\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_kv_usage_ratio 0.5\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_kv_pool_bytes{kind=\"window\"} 40960\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_kv_pool_blocks_used{kind=\"full\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_connections 2\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_ttft_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_ttft_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("vkstream_ttft_seconds_count 3\n"), std::string::npos);
}

TEST(Topic, FixedWidthLowercaseHex) {
  std::mt19937_64 rng(42);
  std::set<std::string> seen;
  for (int k = 0; k < 1000; ++k) {
    const std::string t = topic_for(stream_token_from(rng));
    EXPECT_EQ(t.size(), kTopicBytes);
    EXPECT_EQ(t.rfind("vks.", 0), 0u);
    EXPECT_TRUE(is_valid_topic(t)) << t;
    EXPECT_TRUE(seen.insert(t).second);
  }
  StreamToken tok{};
  tok[0] = 0xAB;
  tok[15] = 0x01;
  EXPECT_EQ(topic_for(tok), "vks.ab000000000000000000000000000001");
  EXPECT_FALSE(is_valid_topic("vks.AB000000000000000000000000000001"));
  EXPECT_FALSE(is_valid_topic("vks.ab00000000000000000000000000001"));
  EXPECT_FALSE(is_valid_topic("req.ab000000000000000000000000000001"));
  EXPECT_NE(topic_for(random_stream_token()), topic_for(random_stream_token()));
}

TEST(Ids, ServerAndClientIds) {
  const std::string id = new_request_id();
  EXPECT_TRUE(is_server_request_id(id));
  EXPECT_TRUE(is_valid_client_id(id));
  EXPECT_TRUE(is_valid_client_id("a"));
  EXPECT_TRUE(is_valid_client_id("Job_42.part-1"));
  EXPECT_TRUE(is_valid_client_id(std::string(64, 'z')));
  EXPECT_FALSE(is_valid_client_id(""));
  EXPECT_FALSE(is_valid_client_id(std::string(65, 'z')));
  for (const char* bad : {"a b", "a/b", "é", "a\nb", "a:b"}) EXPECT_FALSE(is_valid_client_id(bad)) << bad;
  EXPECT_FALSE(is_server_request_id("ABCDEF0123456789abcdef0123456789"));
}

}  // namespace
// Every model is one sample per family under its label; names that need it are escaped, so one
// odd name cannot break the exposition (a scraper would drop the whole page).
TEST(Prometheus, PerModelFamiliesLabelEachModel) {
  ModelMetrics a;
  a.name = "stories260K";
  a.loaded = true;
  a.running = 2;
  a.resident_bytes = 1234;
  ModelMetrics b;
  b.name = "odd\"name\\with\nbreaks";
  const std::vector<ModelMetrics> models = {a, b};
  const std::string text = render_model_metrics(models);
  EXPECT_NE(text.find("vkstream_model_loaded{model=\"stories260K\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vkstream_model_requests_running{model=\"stories260K\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vkstream_model_resident_bytes{model=\"stories260K\"} 1234\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vkstream_model_loaded{model=\"odd\\\"name\\\\with\\nbreaks\"} 0\n"), std::string::npos) << text;
  // One TYPE line per family, every sample line inside its family and labelled with its model:
  // one sample per model for gauges and counters, buckets + sum + count for histograms.
  std::istringstream in(text);
  std::string line;
  std::map<std::string, std::string> kind_of;
  std::map<std::string, int> samples_of;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream l(line.substr(7));
      std::string name, kind;
      l >> name >> kind;
      EXPECT_TRUE(kind_of.emplace(name, kind).second) << line;
    } else if (line[0] != '#') {
      std::string name = line.substr(0, line.find('{'));
      for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
        const std::string base = name.size() > suffix.size() ? name.substr(0, name.size() - suffix.size()) : "";
        if (name.ends_with(suffix) && kind_of.count(base) && kind_of[base] == "histogram") name = base;
      }
      ASSERT_TRUE(kind_of.count(name)) << line;
      EXPECT_NE(line.find("{model=\""), std::string::npos) << line;
      ++samples_of[name];
    }
  }
  for (const auto& [name, kind] : kind_of) {
    // A histogram of these (empty) ones: the +Inf bucket, sum and count per model.
    EXPECT_EQ(samples_of[name], static_cast<int>(models.size()) * (kind == "histogram" ? 3 : 1)) << name;
  }
  EXPECT_TRUE(kind_of.count("vkstream_model_itl_seconds"));
  EXPECT_TRUE(render_model_metrics({}).empty());
}

}  // namespace vks::proto
