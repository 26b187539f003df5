// vkstreamd's command line: defaults that fit a new user (priority scheduling with aging unless
// --fcfs) and cached model names accepted by --model.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "server/bind_check.h"
#include "server/fd_limit.h"
#include "server/gpu_check.h"
#include "server/server_options.h"
#include "server/uds_server.h"
#include "tests/common/test_models.h"

namespace {

std::optional<vks::server::ServerOptions> parse(std::vector<std::string> args) {
  static char program[] = "vkstreamd";
  std::vector<char*> argv{program};
  for (std::string& a : args) argv.push_back(a.data());
  return vks::server::parse_options(static_cast<int>(argv.size()), argv.data());
}

TEST(ServerOptions, PrioritySchedulingIsTheDefaultAndFcfsTurnsItOff) {
  const auto def = parse({"--model", "m.gguf", "--socket", "/tmp/x.sock"});
  ASSERT_TRUE(def.has_value());
  EXPECT_TRUE(def->priority_policy);
  const auto fcfs = parse({"--model", "m.gguf", "--fcfs"});
  ASSERT_TRUE(fcfs.has_value());
  EXPECT_FALSE(fcfs->priority_policy);
  const auto old = parse({"--model", "m.gguf", "--priority"});
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->priority_policy);
}

TEST(ServerOptions, KvTypeSetsBothPoolsUnlessOneIsNamed) {
  const auto def = parse({"--model", "m.gguf"});
  ASSERT_TRUE(def);
  EXPECT_EQ(def->kv_type_k, "f16");
  EXPECT_EQ(def->kv_type_v, "f16");
  const auto both = parse({"--model", "m.gguf", "--kv-type", "q8_0"});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->kv_type_k, "q8_0");
  EXPECT_EQ(both->kv_type_v, "q8_0");
  const auto keys_apart = parse({"--model", "m.gguf", "--kv-type-v", "f16", "--kv-type", "q8_0"});
  ASSERT_TRUE(keys_apart);
  EXPECT_EQ(keys_apart->kv_type_k, "q8_0");
  EXPECT_EQ(keys_apart->kv_type_v, "f16");
  const auto mixed = parse({"--model", "m.gguf", "--kv-type-k", "q8_0", "--kv-type-v", "q4_0"});
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->kv_type_k, "q8_0");
  EXPECT_EQ(mixed->kv_type_v, "q4_0");
  EXPECT_THROW((void)parse({"--model", "m.gguf", "--kv-type", "q4_1"}), vks::Error);
  EXPECT_THROW((void)parse({"--model", "m.gguf", "--kv-type-v", "q5_0"}), vks::Error);
}

// --cpu-experts: automatic unless asked, "all" every expert layer, or a count (llama.cpp's --n-cpu-moe).
TEST(ServerOptions, CpuExpertsTakesAutoAllOrACount) {
  const auto def = parse({"--model", "m.gguf"});
  ASSERT_TRUE(def);
  EXPECT_EQ(def->cpu_expert_layers, -1);
  EXPECT_EQ(parse({"--model", "m.gguf", "--cpu-experts", "3"})->cpu_expert_layers, 3);
  EXPECT_EQ(parse({"--model", "m.gguf", "--cpu-experts", "0"})->cpu_expert_layers, 0);
  EXPECT_EQ(parse({"--model", "m.gguf", "--cpu-experts", "auto"})->cpu_expert_layers, -1);
  EXPECT_GT(parse({"--model", "m.gguf", "--cpu-experts", "all"})->cpu_expert_layers, 1000);
  for (const char* bad : {"-1", "x", "3x", ""}) {
    EXPECT_THROW((void)parse({"--model", "m.gguf", "--cpu-experts", bad}), vks::Error) << bad;
  }
}

TEST(ServerOptions, ThreadsDefaultToPhysicalCoresAndTakeACount) {
  EXPECT_EQ(parse({"--model", "m.gguf"})->cpu_threads, 0);
  EXPECT_EQ(parse({"--model", "m.gguf", "--threads", "3"})->cpu_threads, 3);
  for (const char* bad : {"-1", "1025", "two", ""}) {
    EXPECT_THROW((void)parse({"--model", "m.gguf", "--threads", bad}), vks::Error) << bad;
  }
}

// Several models: no --model needed; --keep-alive reads seconds and durations as Ollama does.
TEST(ServerOptions, ModelsOptions) {
  const auto def = parse({"--models-dir", "/m"});
  ASSERT_TRUE(def);
  EXPECT_TRUE(def->model_path.empty());
  EXPECT_EQ(def->models_dirs, std::vector<std::string>{"/m"});
  EXPECT_EQ(def->max_loaded_models, 3);
  EXPECT_EQ(def->keep_alive_s, 300.0);
  EXPECT_TRUE(def->serve_model_cache);
  const auto set = parse({"--models-dir", "/a", "--models-dir", "/b", "--max-loaded-models", "1", "--keep-alive", "1h30m",
                          "--no-model-cache"});
  ASSERT_TRUE(set);
  EXPECT_EQ(set->models_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(set->max_loaded_models, 1);
  EXPECT_EQ(set->keep_alive_s, 5400.0);
  EXPECT_FALSE(set->serve_model_cache);
  EXPECT_EQ(parse({"--keep-alive", "120"})->keep_alive_s, 120.0);
  EXPECT_EQ(parse({"--keep-alive", "-1"})->keep_alive_s, -1.0);
  EXPECT_EQ(parse({"--keep-alive", "0"})->keep_alive_s, 0.0);
  EXPECT_THROW((void)parse({"--keep-alive", "five minutes"}), vks::Error);
  EXPECT_THROW((void)parse({"--max-loaded-models", "0"}), vks::Error);
}

TEST(ServerOptions, VulkanOverridesTheBackendRuleAndExcludesCpu) {
  const auto def = parse({"--model", "m.gguf"});
  ASSERT_TRUE(def);
  EXPECT_FALSE(def->force_vulkan);
  const auto vulkan = parse({"--model", "m.gguf", "--vulkan"});
  ASSERT_TRUE(vulkan);
  EXPECT_TRUE(vulkan->force_vulkan);
  try {
    (void)parse({"--model", "m.gguf", "--vulkan", "--cpu"});
    FAIL() << "--vulkan with --cpu was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--vulkan"), std::string::npos) << e.what();
  }
}

TEST(ServerOptions, ModelAcceptsACachedName) {
  const std::filesystem::path cache = std::filesystem::temp_directory_path() / ("vks-opt-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(cache / "owner/repo");
  std::ofstream(cache / "owner/repo/m.Q4_0.gguf") << "x";
  ::setenv("VKSTREAM_CACHE_DIR", cache.c_str(), 1);
  const auto o = parse({"--model", "owner/repo:Q4_0"});
  const auto missing = parse({"--model", "/no/such/file.gguf"});
  ::unsetenv("VKSTREAM_CACHE_DIR");
  std::filesystem::remove_all(cache);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->model_path, (cache / "owner/repo/m.Q4_0.gguf").string());
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->model_path, "/no/such/file.gguf");  // the loader reports the missing file
}

std::string bind_error(const std::string& path) {
  try {
    vks::server::check_unix_path_bindable(path, "--socket", 0755);
  } catch (const vks::Error& e) {
    return e.what();
  }
  return {};
}

TEST(BindCheck, UnusablePathsFailWithTheScopeHint) {
  const std::string err = bind_error("/dev/null/vkstream/vkstream.sock");
  EXPECT_NE(err.find("--scope user"), std::string::npos) << err;
  EXPECT_NE(err.find("--socket PATH"), std::string::npos) << err;
  EXPECT_NE(bind_error("/tmp/" + std::string(200, 'x') + ".sock").find("longer than"), std::string::npos);
}

TEST(BindCheck, AFolderTheUserCannotWriteFailsWithTheScopeHint) {
  if (::getuid() == 0) GTEST_SKIP() << "root may write anywhere";
  const std::string dir = std::filesystem::temp_directory_path() / ("vks-ro-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0555);
  const std::string err = bind_error(dir + "/vkstream/vkstream.sock");
  std::filesystem::remove_all(dir);
  EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
  EXPECT_NE(err.find("--scope user"), std::string::npos) << err;
}

TEST(BindCheck, FreshFolderIsCreatedAndLeftClean) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("vks-bind-" + std::to_string(::getpid()));
  EXPECT_EQ(bind_error((dir / "sub/vkstream.sock").string()), "");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "sub"));
  EXPECT_TRUE(std::filesystem::is_empty(dir / "sub"));
  std::filesystem::remove_all(dir);
}

// Issue 37: --scope user created $XDG_RUNTIME_DIR/vkstream with the umask's mode (0755 under
// 022), so any local user could reach the sockets' folder. It is 0700 whatever the umask.
TEST(BindCheck, UserScopeRuntimeFolderIsPrivateWhateverTheUmask) {
  const std::filesystem::path runtime = std::filesystem::temp_directory_path() / ("vks-xdg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(runtime);
  const char* old_xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old_xdg != nullptr ? old_xdg : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  auto o = parse({"--model", "m.gguf", "--scope", "user"});
  ASSERT_TRUE(o.has_value());
  vks::server::apply_default_paths(*o);
  const mode_t old_umask = ::umask(0);
  std::string error;
  try {
    vks::server::check_endpoints_bindable(*o, vks::server::ListenFds{});
  } catch (const vks::Error& e) {
    error = e.what();
  }
  ::umask(old_umask);
  if (old_xdg != nullptr) {
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
  EXPECT_EQ(error, "");
  struct stat st {};
  ASSERT_EQ(::stat((runtime / "vkstream").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  std::filesystem::remove_all(runtime);
}

// Issue 37: the daemon kept the soft open-file limit (often 1024) while allowing 1024 HTTP
// connections, so past ~1,000 clients accept() failed and clients got resets, not 503.
TEST(FdLimit, SoftLimitIsRaisedToTheHardOne) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 128) GTEST_SKIP() << "hard limit too small to test";
  rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const uint64_t now = vks::server::raise_fd_limit();
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(after.rlim_cur, saved.rlim_max);
  EXPECT_EQ(now, saved.rlim_max == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(saved.rlim_max));
}

TEST(FdLimit, ConnectionCapsFitTheLimitWithRoomForOtherSockets) {
  auto caps = vks::server::fit_connection_caps(65536, 1024, 1024);
  EXPECT_EQ(caps.http, 1024u);
  EXPECT_EQ(caps.uds, 1024u);
  EXPECT_EQ(caps.note, "");
  for (const uint64_t limit : {uint64_t{64}, uint64_t{1024}, uint64_t{2048}, uint64_t{4096}}) {
    caps = vks::server::fit_connection_caps(limit, 1024, 1024);
    EXPECT_LE(uint64_t{caps.http} + caps.uds + vks::server::reserved_fds(limit), limit) << limit;
    EXPECT_GE(caps.http, 1u);
    EXPECT_GE(caps.uds, 1u);
    EXPECT_GE(vks::server::reserved_fds(limit), 32u);
  }
  caps = vks::server::fit_connection_caps(1024, 1024, 1024);
  EXPECT_EQ(caps.http, 384u);  // (1024 - 256) / 2
  EXPECT_EQ(caps.uds, 384u);
  EXPECT_NE(caps.note.find("LimitNOFILE"), std::string::npos) << caps.note;
  // A small wanted cap leaves the rest to the other.
  caps = vks::server::fit_connection_caps(1024, 1024, 16);
  EXPECT_EQ(caps.uds, 16u);
  EXPECT_EQ(caps.http, 752u);
}

TEST(BindCheck, LiveServerAtThePathAndBusyTcpPortAreReported) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("vks-busy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "live.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  const std::string err = bind_error(path);
  EXPECT_NE(err.find("address in use"), std::string::npos) << err;
  ::close(fd);

  const int tcp = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(tcp, reinterpret_cast<sockaddr*>(&in), sizeof in), 0);
  ASSERT_EQ(::listen(tcp, 4), 0);
  socklen_t len = sizeof in;
  ::getsockname(tcp, reinterpret_cast<sockaddr*>(&in), &len);
  vks::server::ServerOptions o;
  o.socket_path = (dir / "ok.sock").string();
  o.router_endpoint = "tcp://127.0.0.1:" + std::to_string(ntohs(in.sin_port));
  try {
    vks::server::check_endpoints_bindable(o, vks::server::ListenFds{});
    ADD_FAILURE() << "busy port accepted";
  } catch (const vks::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--router"), std::string::npos) << e.what();
  }
  ::close(tcp);
  std::filesystem::remove_all(dir);
}

TEST(BindCheck, DaemonFailsBeforeLoadingTheModel) {
  const std::string cmd = vks::test::build_dir() + "/server/vkstreamd --model " + vks::test::model_path("stories260K.gguf") +
                          " --cpu --socket /dev/null/vkstream.sock 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("--scope user"), std::string::npos) << out;
  EXPECT_EQ(out.find("loading model"), std::string::npos) << out;
}

TEST(ServerOptions, VulkanWithoutADeviceFailsAtStartInsteadOfFallingBack) {
  // No Vulkan driver for this process: --vulkan must not quietly serve from the CPU reference.
  const std::string cmd = "VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json " +
                          vks::test::build_dir() + "/server/vkstreamd --model " +
                          vks::test::model_path("stories260K.gguf") + " --vulkan --socket " +
                          std::filesystem::temp_directory_path().string() + "/vks-vulkan-" +
                          std::to_string(::getpid()) + ".sock 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  EXPECT_NE(::pclose(p), 0) << out;
  EXPECT_NE(out.find("no Vulkan device found"), std::string::npos) << out;
  EXPECT_NE(out.find("--vulkan"), std::string::npos) << out;
}

TEST(GpuCheck, WarnsOnlyForACpuDeviceWhenAGpuExists) {
  const std::filesystem::path dri = std::filesystem::temp_directory_path() / ("vks-dri-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dri);
  EXPECT_TRUE(vks::server::gpu_render_nodes(dri.string()).empty());
  std::ofstream(dri / "renderD128") << "";
  std::ofstream(dri / "card0") << "";
  const std::vector<std::string> nodes = vks::server::gpu_render_nodes(dri.string());
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0], (dri / "renderD128").string());
  EXPECT_TRUE(vks::server::is_cpu_device("cpu"));
  EXPECT_TRUE(vks::server::is_cpu_device("llvmpipe (LLVM 15.0.7, 256 bits)"));
  EXPECT_FALSE(vks::server::is_cpu_device("AMD Radeon RX 7900 XTX (RADV NAVI31)"));
  const auto warning = vks::server::cpu_device_warning("llvmpipe (LLVM 15.0.7, 256 bits)", nodes);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("renderD128"), std::string::npos) << *warning;
  EXPECT_FALSE(vks::server::cpu_device_warning("NVIDIA H100", nodes).has_value());
  EXPECT_FALSE(vks::server::cpu_device_warning("cpu", {}).has_value());
  std::filesystem::remove_all(dri);
}

}  // namespace

// Issue 15: hello advertised a relative --router/--pub as given, useless to a client elsewhere.
TEST(ServerOptions, RelativeIpcEndpointsBecomeAbsolute) {
  auto o = parse({"--model", "m.gguf", "--socket", "/tmp/x.sock", "--router", "ipc://rel/router.zmq", "--pub",
                  "ipc:///abs/pub.zmq"});
  ASSERT_TRUE(o.has_value());
  vks::server::apply_default_paths(*o);
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(o->router_endpoint, "ipc://" + cwd + "/rel/router.zmq");
  EXPECT_EQ(o->pub_endpoint, "ipc:///abs/pub.zmq");
  EXPECT_EQ(o->socket_path, "/tmp/x.sock");
}

// Faults 7 and 8 of issue 14.
namespace vks::server {
namespace {

std::string error_of(std::vector<std::string> args) {
  static char program[] = "vkstreamd";
  static char model_flag[] = "--model";
  static char model_path[] = "/nonexistent/model.gguf";
  std::vector<char*> argv{program, model_flag, model_path};
  for (std::string& a : args) argv.push_back(a.data());
  try {
    (void)parse_options(static_cast<int>(argv.size()), argv.data());
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Fault 7 of issue 14: a malformed key was reported as "no CURVE key was given".
TEST(ServerOptions, MalformedCurveKeyIsCalledMalformed) {
  for (const std::string& key : std::vector<std::string>{"short", std::string(40, '~'), std::string(41, 'a')}) {
    const std::string e = error_of({"--router", "tcp://127.0.0.1:5555", "--curve-secret-key", key});
    EXPECT_NE(e.find("--curve-secret-key is malformed"), std::string::npos) << key << ": " << e;
    EXPECT_EQ(e.find("no CURVE key was given"), std::string::npos) << e;
  }
  const std::string missing = error_of({"--router", "tcp://127.0.0.1:5555"});
  EXPECT_NE(missing.find("no CURVE key was given"), std::string::npos) << missing;
}

// Fault 8 of issue 14: --allow-uid X used to replace the default list, refusing the owner and root.
TEST(PeerPolicy, AllowListAddsToOwnerAndRootUnlessDenied) {
  const uint32_t owner = getuid();
  const uint32_t other = owner == 54321 ? 54322 : 54321;
  const uint32_t stranger = other + 1;
  PeerPolicy policy{{other}, {}, {}};
  EXPECT_TRUE(policy.allows(ucred{1, owner, 1}));
  EXPECT_TRUE(policy.allows(ucred{1, 0, 0}));
  EXPECT_TRUE(policy.allows(ucred{1, other, 1}));
  EXPECT_FALSE(policy.allows(ucred{1, stranger, 1}));
  policy.deny_uids = {owner, 0};
  EXPECT_FALSE(policy.allows(ucred{1, owner, 1}));
  EXPECT_FALSE(policy.allows(ucred{1, 0, 0}));
  EXPECT_TRUE(policy.allows(ucred{1, other, 1}));
  const PeerPolicy defaults;
  EXPECT_TRUE(defaults.allows(ucred{1, owner, 1}));
  EXPECT_FALSE(defaults.allows(ucred{1, stranger, 1}));
}

}  // namespace
}  // namespace vks::server
