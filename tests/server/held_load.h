// Holds a daemon's model load open for as long as a test needs: pass held_load_fifo()'s path as
// --chat-template and the loader blocks reading it until release_held_load() writes the template.
// Tests of what the daemon does while loading need this because the CPU backend loads the fixture
// models in milliseconds, too fast to observe reliably.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace vks::test {

// Creates the FIFO in `dir`; empty when it cannot.
inline std::string held_load_fifo(const std::string& dir) {
  const std::string path = dir + "/template.fifo";
  return mkfifo(path.c_str(), 0600) == 0 ? path : std::string();
}

// Writes a ChatML template into the FIFO, which ends the load. A non-blocking open fails with
// ENXIO until the loader has opened its end, so this retries (while `alive()`, up to 60 s) rather
// than hanging on a daemon that never gets there.
inline bool release_held_load(const std::string& fifo, const std::function<bool()>& alive) {
  const std::string tmpl =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && alive()) {
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      const bool written = write(fd, tmpl.data(), tmpl.size()) == static_cast<ssize_t>(tmpl.size());
      close(fd);
      return written;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace vks::test
