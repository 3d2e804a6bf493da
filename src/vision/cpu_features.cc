#include "vision/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace sluice::vision::internal {
namespace {

#if defined(__x86_64__)
// CPUID + XGETBV by hand: clang 14's __builtin_cpu_supports does not know "f16c".
// Whether the OS saves every register state in `mask` (XCR0 bits) across context switches.
bool OsSaves(unsigned mask) {
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & mask) == mask;
}
constexpr unsigned kYmmState = 0x6;   // XMM, YMM
constexpr unsigned kZmmState = 0xe6;  // XMM, YMM, opmask, ZMM 0-15 upper halves, ZMM 16-31

bool Leaf1Has(unsigned ecx_bits) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned need = ecx_bits | bit_AVX | bit_OSXSAVE;
  return (ecx & need) == need && OsSaves(kYmmState);
}

bool Leaf7Has(unsigned ebx_bits) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & ebx_bits) == ebx_bits;
}
#endif

}  // namespace

bool HaveAvx2Fma() {
#if defined(__x86_64__)
  static const bool have = Leaf1Has(bit_FMA) && Leaf7Has(bit_AVX2);
  return have;
#else
  return false;
#endif
}

bool HaveF16c() {
#if defined(__x86_64__)
  static const bool have = Leaf1Has(bit_F16C);
  return have;
#else
  return false;
#endif
}

bool HaveAvx512f() {
#if defined(__x86_64__)
  static const bool have = HaveAvx2Fma() && Leaf7Has(bit_AVX512F) && OsSaves(kZmmState);
  return have;
#else
  return false;
#endif
}

}  // namespace sluice::vision::internal
