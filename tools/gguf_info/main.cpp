// vks-gguf-info: prints a GGUF's header, metadata and tensor table, and whether vkstreamd can serve
// it (and if not, why: the very verdict vkstreamd gives, from servable_model.h). Exit status:
// 0 runnable, 1 unreadable file, 3 readable but not runnable.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/servable_model.h"

namespace {

std::string scalar_text(const vks::gguf::Value& v) {
  using vks::gguf::ValueType;
  switch (v.type) {
    case ValueType::kFloat32: case ValueType::kFloat64: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", v.f);
      return buf;
    }
    case ValueType::kBool: return v.u ? "true" : "false";
    case ValueType::kString: return "\"" + (v.s.size() > 60 ? v.s.substr(0, 60) + "..." : v.s) + "\"";
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64: return std::to_string(v.i);
    case ValueType::kArray: return "";
    default: return std::to_string(v.u);
  }
}

std::string value_text(const vks::gguf::Value& v, size_t max_elems) {
  if (v.type != vks::gguf::ValueType::kArray) return scalar_text(v);
  std::string s = "[" + std::string(vks::gguf::value_type_name(v.elem_type)) + " x " + std::to_string(v.arr.size()) + "]";
  for (size_t k = 0; k < v.arr.size() && k < max_elems; ++k) s += (k ? ", " : " ") + value_text(v.arr[k], 2);
  if (v.arr.size() > max_elems) s += ", ...";
  return s;
}

int run(int argc, char** argv) {
  CLI::App app{"Show a GGUF file's metadata and tensors, and whether vkstream can run it."};
  std::string path;
  bool no_tensors = false;
  size_t max_elems = 8;
  app.add_option("file", path, "GGUF file")->required();
  app.add_flag("--no-tensors", no_tensors, "Do not list tensors");
  app.add_option("--array-items", max_elems, "Array elements shown per key")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  vks::gguf::GgufFile file = vks::gguf::GgufFile::open(path);
  std::printf("%s: GGUF v%u, %llu bytes, alignment %u, data at %llu, %zu keys, %zu tensors\n", path.c_str(), file.version(),
              static_cast<unsigned long long>(file.file_size()), file.alignment(),
              static_cast<unsigned long long>(file.data_offset()), file.metadata().size(), file.tensors().size());
  for (const vks::gguf::KeyValue& kv : file.metadata()) {
    std::printf("  %-44s %-8s %s\n", kv.key.c_str(), std::string(vks::gguf::value_type_name(kv.value.type)).c_str(),
                value_text(kv.value, max_elems).c_str());
  }
  if (!no_tensors) {
    for (const vks::gguf::TensorInfo& t : file.tensors()) {
      std::string dims;
      for (uint64_t d : t.dims) dims += (dims.empty() ? "" : " x ") + std::to_string(d);
      std::printf("  tensor %-36s %-6s [%s] %llu bytes at +%llu\n", t.name.c_str(), std::string(vks::ggml_type_name(t.type)).c_str(),
                  dims.c_str(), static_cast<unsigned long long>(t.nbytes), static_cast<unsigned long long>(t.offset));
    }
  }
  try {
    const vks::ServableModel served = vks::load_servable_model(std::move(file));
    std::printf("runnable %s\n", vks::describe_servable_model(*served.model).c_str());
    return 0;
  } catch (const vks::Error& e) {
    std::printf("not runnable by vkstreamd: %s [%s]\n", e.what(), std::string(vks::error_code_name(e.code())).c_str());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const vks::Error& e) {
    std::fprintf(stderr, "vks-gguf-info: %s [%s]\n", e.what(), std::string(vks::error_code_name(e.code())).c_str());
    return 1;
  }
}
