// The CUDA C++ ground truth for the suite's TMA copies: a 2-D fp16 copy whose every byte moves
// through the Tensor Memory Accelerator, written by hand so that no compiler decides whether TMA
// is used. When this kernel shows UTMALDG/UTMASTG in its SASS and runs at full bandwidth while a
// Triton copy does not, the compiler is at fault, not the platform.
//
// Each block moves one BM x BN tile: thread 0 arms an mbarrier with the tile's byte count,
// issues cp.async.bulk.tensor (global -> shared) against the source tensor map, waits on the
// mbarrier's phase, then issues cp.async.bulk.tensor (shared -> global) against the destination
// map and waits until the store has read shared memory. The tensor maps are encoded on the host
// with cuTensorMapEncodeTiled (reprokit.harness.cudacpp does it through the driver API) and
// passed by value as __grid_constant__ parameters. TMA clips out-of-bounds boxes itself: a
// matrix that is not a multiple of the tile is copied exactly with a grid of ceil(M/BM) x ceil(N/BN).
//
// Build: nvcc -cubin -arch=sm_90a -O3 -DBM=128 -DBN=128 -o tma_copy.cubin tma_copy.cu
// (sm_90a or newer: TMA needs Hopper). Launch: grid (ceil(N/BN), ceil(M/BM)), 32 threads.

#include <cuda.h>
#include <stdint.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif

static_assert(BN * 2 % 16 == 0, "TMA needs the box's inner dimension to be a multiple of 16 bytes");
static_assert(BM <= 256 && BN <= 256, "TMA boxes have at most 256 elements per dimension");

extern "C" __global__ void __launch_bounds__(32)
tma_copy_2d(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // TMA needs 128-byte aligned shared memory for a box (16 bytes without swizzle; keep 128).
    __shared__ alignas(128) uint16_t tile[BM * BN];
    __shared__ alignas(8) uint64_t bar;
    if (threadIdx.x != 0) {
        return;
    }
    const int32_t col = blockIdx.x * BN;  // tensor-map coordinates: innermost dimension first
    const int32_t row = blockIdx.y * BM;
    const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
    const uint32_t mbar = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
    const uint32_t bytes = BM * BN * sizeof(uint16_t);  // a clipped box still counts in full

    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mbar) : "memory");
    // The barrier was initialised by the generic proxy; TMA (the async proxy) must see it.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mbar), "r"(bytes) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(smem), "l"(reinterpret_cast<uint64_t>(&src)), "r"(col), "r"(row), "r"(mbar)
        : "memory");
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_LOAD:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
        "@!done bra WAIT_LOAD;\n"
        "}\n" ::"r"(mbar)
        : "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(reinterpret_cast<uint64_t>(&dst)), "r"(col), "r"(row), "r"(smem)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // Shared memory must outlive the store's reads of it.
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}
