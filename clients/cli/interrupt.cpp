#include "clients/cli/interrupt.h"

#include <csignal>
#include <unistd.h>

namespace vks::cli {
namespace {
// A signal handler can only reach static storage; this is the one flag it sets.
volatile std::sig_atomic_t g_interrupts = 0;
struct sigaction g_previous {};

void on_sigint(int) {
  g_interrupts = g_interrupts + 1;
  if (g_interrupts >= 2) _exit(130);
}
}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupts = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &g_previous, nullptr); }

bool InterruptGuard::interrupted() const { return g_interrupts > 0; }

void InterruptGuard::reset() { g_interrupts = 0; }

}  // namespace vks::cli
