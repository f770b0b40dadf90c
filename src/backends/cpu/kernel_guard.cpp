#include "backends/cpu/kernel_guard.hpp"

#include <pthread.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <thread>

#include "bronze/error.hpp"
#include "runtime/shader_module.hpp"

// Kernel code runs on a stack of its own (below), so a write past the end of
// a kernel's private array reaches only the kernel's own frames and then an
// inaccessible page, never the frames of the thread that runs it (the guard's
// jump buffer, its watch, the pool's state). Not under sanitizers, which
// track the thread's one stack.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define BRONZE_KERNEL_STACK 1
// bronze_call_on_stack(fn, ctx, top) calls fn(ctx) with the stack pointer at
// `top` and returns on the caller's stack. The caller's stack pointer is kept
// in thread-local storage, not on the kernel's stack (which the kernel may
// have overwritten), and every callee-saved register comes back from the
// caller's own stack.
extern "C" {
__attribute__((tls_model("initial-exec"), visibility("hidden"))) __thread void* bronze_guard_saved_sp;
void bronze_call_on_stack(void (*fn)(void*), void* ctx, void* top);
}
asm(R"(
  .text
  .globl bronze_call_on_stack
  .hidden bronze_call_on_stack
  .type bronze_call_on_stack, @function
bronze_call_on_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  movq bronze_guard_saved_sp@gottpoff(%rip), %rax
  movq %rsp, %fs:(%rax)
  movq %rdi, %rax
  movq %rsi, %rdi
  movq %rdx, %rsp
  callq *%rax
  movq bronze_guard_saved_sp@gottpoff(%rip), %rax
  movq %fs:(%rax), %rsp
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size bronze_call_on_stack, .-bronze_call_on_stack
)");
#endif

namespace bronze::cpu {
namespace {

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr std::uintptr_t kStackReach = 64 * 1024;  // red zone and the runtime's frames
// A kernel stack: as deep as a thread's default stack, reserved and committed
// as frames touch it, between inaccessible guards. The one above is large (an
// address-space reservation, no memory): an index past the end of a private
// array lands in it for any index up to 16M floats, not only for a
// contiguous overrun.
constexpr std::size_t kKernelStack = 8 << 20, kKernelStackGuard = 64 * 1024, kKernelStackTopGuard = 64 << 20;
constexpr std::size_t kKernelStackMap = kKernelStackGuard + kKernelStack + kKernelStackTopGuard;
// The watchdog's signal to a thread whose launch ran past its limit.
int stop_signal() { return SIGRTMAX - 2; }

// A thread's part of a launch, as the watchdog sees it.
struct Watch {
  pthread_t thread;
  std::chrono::steady_clock::time_point deadline;
  volatile std::sig_atomic_t expired = 0;  // set before the stop signal is sent
};

// What a guarded thread shares with the signal handler.
struct ThreadState {
  sigjmp_buf* jump = nullptr;  // set while kernel code runs on this thread
  Watch* watch = nullptr;
  KernelGuard::Failure failure;
  void* altstack = nullptr;
  std::size_t altstack_bytes = 0;
  char* stack_map = nullptr;  // [guard][kKernelStack][top guard], made at the first launch
  bool stack_refused = false;

  // The top of this thread's kernel stack, or nullptr (no memory for it: the
  // kernel runs on the thread's own stack, as it once did).
  char* kernel_stack_top() {
    if (!stack_map && !stack_refused) {
      void* m = mmap(nullptr, kKernelStackMap, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m != MAP_FAILED && mprotect(static_cast<char*>(m) + kKernelStackGuard, kKernelStack,
                                      PROT_READ | PROT_WRITE) == 0) {
        stack_map = static_cast<char*>(m);
      } else {
        if (m != MAP_FAILED) munmap(m, kKernelStackMap);
        stack_refused = true;
      }
    }
    return stack_map ? stack_map + kKernelStackGuard + kKernelStack : nullptr;
  }

  ThreadState() {
    // A stack overflow leaves no stack to handle it on: the handler runs on
    // this one. A thread that already has one (Python's faulthandler) keeps it.
    stack_t old{};
    if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE)) return;
    altstack_bytes = 64 * 1024 + 4 * static_cast<std::size_t>(SIGSTKSZ);
    void* m = mmap(nullptr, altstack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;  // faults then still end the launch, overflows the process
    stack_t st{};
    st.ss_sp = m;
    st.ss_size = altstack_bytes;
    if (sigaltstack(&st, nullptr) != 0) {
      munmap(m, altstack_bytes);
      return;
    }
    altstack = m;
  }
  ~ThreadState();
};

// The handler reads this without calling into the TLS machinery (which may
// allocate): initial-exec, set before any kernel code runs on the thread.
__attribute__((tls_model("initial-exec"))) thread_local ThreadState* t_state = nullptr;

ThreadState::~ThreadState() {
  t_state = nullptr;  // a signal while the thread exits finds no guard
  if (stack_map) munmap(stack_map, kKernelStackMap);
  if (!altstack) return;
  stack_t st{};
  st.ss_flags = SS_DISABLE;
  sigaltstack(&st, nullptr);
  munmap(altstack, altstack_bytes);
}

// What runs for a fault outside kernels: the handler each signal had before
// bronze's (g_before), and the one bronze last displaced when it found
// another library's handler in its place and put its own back (g_displaced;
// g_before until then). Pointers, each written once before it is published:
// a handler may read them on any thread at any time, so none is ever freed.
std::atomic<const struct sigaction*> g_before[NSIG], g_displaced[NSIG];

// The fault signal this thread handed to another handler and that may come
// back: the handler bronze displaced passes it on to the one it replaced,
// bronze's (faulthandler restores that one and raises the signal again).
__attribute__((tls_model("initial-exec"))) thread_local int t_handed_on = 0;

#if defined(__x86_64__)
// The length of the div/idiv at `p` (0 if it is not one), and its operand
// size in bytes.
int division_length(const std::uint8_t* p, int& size) {
  int n = 0;
  bool wide16 = false, rex_w = false;
  for (;; ++n) {
    std::uint8_t b = p[n];
    if (b == 0x66) wide16 = true;
    else if (b == 0x67 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x3E || b == 0x26 || b == 0x36 ||
             b == 0x64 || b == 0x65) {
    } else break;
  }
  if ((p[n] & 0xF0) == 0x40) rex_w = (p[n++] & 0x08) != 0;
  const std::uint8_t op = p[n];
  if (op != 0xF6 && op != 0xF7) return 0;
  const std::uint8_t modrm = p[n + 1];
  const int reg = (modrm >> 3) & 7, mod = modrm >> 6, rm = modrm & 7;
  if (reg != 6 && reg != 7) return 0;
  n += 2;
  if (mod != 3) {
    if (rm == 4 && (p[n++] & 7) == 5 && mod == 0) n += 4;  // SIB without a base register
    else if (rm == 5 && mod == 0) n += 4;                  // RIP-relative
    n += mod == 1 ? 1 : mod == 2 ? 4 : 0;
  }
  size = op == 0xF6 ? 1 : rex_w ? 8 : wide16 ? 2 : 4;
  return n;
}

// Completes a faulting division as a GPU would, without a fault: the
// quotient is the dividend's low half (exact for INT_MIN / -1, unspecified
// for a zero divisor), the remainder 0.
bool complete_division(void* uctx) {
  auto* uc = static_cast<ucontext_t*>(uctx);
  greg_t* r = uc->uc_mcontext.gregs;
  int size = 0;
  int len = division_length(reinterpret_cast<const std::uint8_t*>(r[REG_RIP]), size);
  if (!len) return false;
  auto rax = static_cast<std::uint64_t>(r[REG_RAX]), rdx = static_cast<std::uint64_t>(r[REG_RDX]);
  switch (size) {
    case 1: rax = (rax & ~0xFFFFull) | (rax & 0xFF); break;  // AL keeps AX's low byte, AH = 0
    case 2: rdx &= ~0xFFFFull; break;
    case 4: rax &= 0xFFFFFFFFull; rdx = 0; break;
    default: rdx = 0; break;
  }
  r[REG_RAX] = static_cast<greg_t>(rax);
  r[REG_RDX] = static_cast<greg_t>(rdx);
  r[REG_RIP] += len;
  return true;
}

std::uintptr_t stack_pointer(void* uctx) {
  return static_cast<std::uintptr_t>(static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_RSP]);
}
bool write_fault(void* uctx) { return static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_ERR] & 2; }
#else
bool complete_division(void*) { return false; }  // other CPUs do not trap on division
std::uintptr_t stack_pointer(void*) { return 0; }
bool write_fault(void*) { return false; }
#endif

// Not ours: what would have happened without bronze. A fault the handler
// bronze displaced hands back goes on to the handler before bronze's.
void chain(int sig, siginfo_t* info, void* uctx) {
  const bool back = t_handed_on == sig;
  const struct sigaction& prev = *(back ? g_before : g_displaced)[sig].load(std::memory_order_acquire);
  t_handed_on = sig;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, uctx);
  } else if (prev.sa_handler == SIG_DFL || (prev.sa_handler == SIG_IGN && info->si_code > 0)) {
    // The default action, as for a fault the kernel cannot deliver (an
    // ignored one too): a fault runs again and ends the process; a signal
    // sent by kill() is raised again.
    signal(sig, SIG_DFL);
    if (info->si_code <= 0) raise(sig);
  } else if (prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  }
  sigset_t pending;
  t_handed_on = !back && sigpending(&pending) == 0 && sigismember(&pending, sig) ? sig : 0;
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
  ThreadState* t = t_state;
  if (sig == stop_signal()) {
    if (t && t->jump && t->watch && t->watch->expired) {
      t->failure = KernelGuard::Failure{};
      siglongjmp(*t->jump, 1);
    }
    return;  // a stop that arrived after its launch ended
  }
  if (!t || !t->jump) return chain(sig, info, uctx);
  if (sig == SIGFPE && (info->si_code == FPE_INTDIV || info->si_code == FPE_INTOVF) && complete_division(uctx))
    return;
  auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  std::uintptr_t sp = stack_pointer(uctx);
  t->failure.signal = sig;
  t->failure.address = addr;
  t->failure.write = sig == SIGSEGV && write_fault(uctx);
  // A fault within a frame's reach of the stack pointer is the stack running
  // into its guard: a frame is at most kMaxPrivateBytes (refused when built).
  t->failure.stack_overflow = (sig == SIGSEGV || sig == SIGBUS) && sp && addr + kStackReach > sp &&
                              addr < sp + runtime::kMaxPrivateBytes + kStackReach;
  // Above the top of the kernel stack: a write past the end of a private array.
  const auto top = reinterpret_cast<std::uintptr_t>(t->stack_map) + kKernelStackGuard + kKernelStack;
  t->failure.stack_overrun = t->stack_map && addr >= top && addr < top + kKernelStackTopGuard;
  if (t->failure.stack_overrun) t->failure.stack_overflow = false;
  siglongjmp(*t->jump, 1);
}

bool is_ours(const struct sigaction& sa) { return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_signal; }

// Puts bronze's handler for `sig` back if another library (a crash reporter,
// faulthandler, a test harness, signal.signal) installed its own since the
// last launch: that one would meet the kernel's faults. Reading a handler is
// one system call; replacing one happens only when it is not bronze's.
void assert_handler(int sig) {
  static std::mutex mu;
  struct sigaction now {};
  if (sigaction(sig, nullptr, &now) != 0 || is_ours(now)) return;
  std::lock_guard<std::mutex> g(mu);
  if (sigaction(sig, nullptr, &now) != 0 || is_ours(now)) return;  // another launch put it back first
  // Published before bronze's handler is, which reads it.
  auto* displaced = new struct sigaction(now);  // never freed (above); one per handler found in bronze's place
  if (!g_before[sig].load(std::memory_order_relaxed)) g_before[sig].store(displaced, std::memory_order_release);
  g_displaced[sig].store(displaced, std::memory_order_release);
  struct sigaction ours {};
  ours.sa_sigaction = on_signal;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  sigaction(sig, &ours, nullptr);
}

// At each launch; the stop signal's only for a launch with a time limit.
void assert_handlers(bool stoppable) {
  for (int sig : kFaultSignals) assert_handler(sig);
  if (stoppable) assert_handler(stop_signal());
}

ThreadState& thread_state() {
  static thread_local ThreadState state;
  t_state = &state;
  return state;
}

// Sends the stop signal to threads whose launch ran past its deadline.
class Watchdog {
 public:
  static Watchdog& instance() {
    static Watchdog* w = new Watchdog;  // never destroyed: guarded threads may outlive statics
    return *w;
  }
  void add(Watch* w) {
    std::lock_guard<std::mutex> g(mu_);
    watches_.push_back(w);
    cv_.notify_one();
  }
  void remove(Watch* w) {
    std::lock_guard<std::mutex> g(mu_);
    watches_.remove(w);
  }

 private:
  Watchdog() {
    std::thread([this] { loop(); }).detach();
  }
  void loop() {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, stop_signal());
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      auto next = std::chrono::steady_clock::time_point::max();
      auto now = std::chrono::steady_clock::now();
      for (Watch* w : watches_) {
        if (w->expired) continue;
        if (w->deadline <= now) {
          w->expired = 1;
          pthread_kill(w->thread, stop_signal());  // under mu_: the thread is still in its launch
        } else if (w->deadline < next) {
          next = w->deadline;
        }
      }
      if (next == std::chrono::steady_clock::time_point::max()) cv_.wait(lock);
      else cv_.wait_until(lock, next);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Watch*> watches_;
};

std::string hex(std::uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

KernelGuard::KernelGuard(std::string kernel, double time_limit_s)
    : kernel_(std::move(kernel)), time_limit_s_(time_limit_s) {
  assert_handlers(time_limit_s_ > 0);
  if (time_limit_s_ > 0)
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(time_limit_s_));
}

bool KernelGuard::run(void (*fn)(void*), void* ctx) {
  if (failed_.load(std::memory_order_relaxed)) return false;
  ThreadState& t = thread_state();
  Watch watch{pthread_self(), deadline_};
  const bool limited = time_limit_s_ > 0;
  if (limited) {
    t.watch = &watch;
    Watchdog::instance().add(&watch);
  }
  sigjmp_buf jump;
  bool ok;
  if (sigsetjmp(jump, 1) == 0) {
    t.jump = &jump;
#ifdef BRONZE_KERNEL_STACK
    if (char* top = t.kernel_stack_top()) bronze_call_on_stack(fn, ctx, top);
    else fn(ctx);
#else
    fn(ctx);
#endif
    t.jump = nullptr;
    ok = true;
  } else {
    t.jump = nullptr;
    ok = false;
  }
  if (limited) {
    Watchdog::instance().remove(&watch);
    t.watch = nullptr;
  }
  if (ok) return true;
  std::lock_guard<std::mutex> g(mu_);
  if (!failed_.exchange(true)) failure_ = t.failure;
  return false;
}

std::optional<KernelGuard::Failure> KernelGuard::failure() const {
  if (!failed_.load()) return std::nullopt;
  std::lock_guard<std::mutex> g(mu_);
  return failure_;
}

void KernelGuard::check() const {
  if (!failed_.load()) return;
  std::lock_guard<std::mutex> g(mu_);
  const Failure& f = failure_;
  std::string what = "kernel '" + kernel_ + "' ";
  if (f.signal == 0) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", time_limit_s_);
    throw DeviceError(what + "ran past the kernel time limit of " + limit +
                      " s (bronze.set_kernel_time_limit, BRONZE_KERNEL_TIME_LIMIT) and was stopped; its outputs "
                      "are incomplete. The device goes on serving new work.");
  }
  if (f.stack_overrun)
    throw DeviceError(what + "wrote past the top of its stack (an index past the end of a private array?) and "
                      "was stopped; its outputs are incomplete. Nothing outside its stack was overwritten; "
                      "validate=True names the array and the index.");
  if (f.stack_overflow)
    throw DeviceError(what + "overflowed its stack (recursion, calls whose frames add up past the " +
                      std::to_string(runtime::kMaxPrivateBytes / 1024) +
                      " KiB a kernel thread has, or an index past the end of a private array) and was stopped; "
                      "its outputs are incomplete. Nothing outside its stack was overwritten.");
  std::string fault;
  switch (f.signal) {
    case SIGSEGV: fault = "an invalid memory access at " + hex(f.address) + " (SIGSEGV)"; break;
    case SIGBUS: fault = "a bus error at " + hex(f.address) + " (SIGBUS)"; break;
    case SIGFPE: fault = "an arithmetic fault (SIGFPE)"; break;
    case SIGILL: fault = "an illegal instruction at " + hex(f.address) + " (SIGILL: a trap, or an instruction this CPU lacks)"; break;
    default: fault = "signal " + std::to_string(f.signal); break;
  }
  std::string trust = f.signal == SIGSEGV || f.signal == SIGBUS
                          ? " Writes it made through bad pointers before the fault may have changed other memory "
                            "of this process (other tensors, bronze's own state): if the kernel may have written "
                            "out of bounds, results from here on cannot be trusted; validate=True finds the access."
                          : "";
  throw DeviceError(what + "stopped at " + fault + "; its outputs are incomplete." + trust);
}

}  // namespace bronze::cpu
