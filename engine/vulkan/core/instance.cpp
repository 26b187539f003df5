#include "engine/vulkan/core/instance.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

#include "engine/vulkan/core/vk_error.h"

namespace vks::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool env_validation() {
  const char* v = std::getenv("VKSTREAM_VK_VALIDATION");
  return v != nullptr && std::string_view(v) == "1";
}

bool layer_available(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                     void* /*user*/) {
  const char* msg = data != nullptr && data->pMessage != nullptr ? data->pMessage : "";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    spdlog::error("vulkan validation: {}", msg);
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    spdlog::warn("vulkan validation: {}", msg);
  } else {
    spdlog::debug("vulkan validation: {}", msg);
  }
  return VK_FALSE;
}

}  // namespace

Instance Instance::create() { return create(env_validation()); }

std::shared_ptr<const Instance> Instance::shared() { return shared(env_validation()); }

namespace {

std::mutex& shared_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Deliberately never destroyed by a static's destructor: that would call vkDestroyInstance after
// NVIDIA's driver has run its own exit handlers (registered inside vkCreateInstance, so they run
// first), and every Vulkan program segfaulted at exit on an H100 (driver 580.159.04) after printing
// all its results. llama.cpp's Vulkan backend does the same. release_shared() empties the slots
// from main instead, before any exit handler runs.
std::shared_ptr<const Instance>* shared_slots() {
  static auto* const instances = new std::shared_ptr<const Instance>[2];
  return instances;
}

}  // namespace

std::shared_ptr<const Instance> Instance::shared(bool validation) {
  std::lock_guard<std::mutex> lock(shared_mutex());
  std::shared_ptr<const Instance>& slot = shared_slots()[validation ? 1 : 0];
  if (!slot) slot = std::make_shared<const Instance>(create(validation));
  return slot;
}

void Instance::release_shared() {
  std::lock_guard<std::mutex> lock(shared_mutex());
  for (int i = 0; i < 2; ++i) shared_slots()[i].reset();
}

Instance Instance::create(bool validation) {
  if (validation && !layer_available(kValidationLayer)) {
    spdlog::warn("VKSTREAM_VK_VALIDATION=1 but {} is not installed (package vulkan-validationlayers); continuing without",
                 kValidationLayer);
    validation = false;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "vkstream";
  app.applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.pEngineName = "vkstream";
  app.engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.apiVersion = VK_API_VERSION_1_2;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  if (validation) {
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();

  Instance out;
  check(vkCreateInstance(&ci, nullptr, &out.instance_), "vkCreateInstance (Vulkan 1.2)");
  if (validation) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(out.instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create_messenger != nullptr) {
      VkDebugUtilsMessengerCreateInfoEXT mi{};
      mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
      mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      mi.pfnUserCallback = on_validation_message;
      check(create_messenger(out.instance_, &mi, nullptr, &out.messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
  }
  return out;
}

Instance::~Instance() { reset(); }

Instance::Instance(Instance&& other) noexcept
    : instance_(std::exchange(other.instance_, VK_NULL_HANDLE)),
      messenger_(std::exchange(other.messenger_, VK_NULL_HANDLE)) {}

Instance& Instance::operator=(Instance&& other) noexcept {
  if (this != &other) {
    reset();
    instance_ = std::exchange(other.instance_, VK_NULL_HANDLE);
    messenger_ = std::exchange(other.messenger_, VK_NULL_HANDLE);
  }
  return *this;
}

void Instance::reset() noexcept {
  if (instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy_messenger != nullptr) destroy_messenger(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> out(n);
  if (n > 0) check(vkEnumeratePhysicalDevices(instance_, &n, out.data()), "vkEnumeratePhysicalDevices");
  out.resize(n);
  return out;
}

}  // namespace vks::vk
