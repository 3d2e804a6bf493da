// Internal: which SIMD kernels this CPU can run. Kernels are compiled per instruction set
// with __attribute__((target)) and chosen at run time, so one binary runs everywhere.
#pragma once

namespace sluice::vision::internal {

// AVX2 and FMA, with the OS saving YMM registers.
bool HaveAvx2Fma();
// AVX and F16C (binary16 conversions), with the OS saving YMM registers.
bool HaveF16c();
// AVX-512F, with the OS saving ZMM and opmask registers (and AVX2 + FMA).
bool HaveAvx512f();

}  // namespace sluice::vision::internal
