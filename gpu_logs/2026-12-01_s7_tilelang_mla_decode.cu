#if defined(_MSC_VER) && !defined(__clang__) && _MSC_VER < 1940
#define _tl_orig_alignas alignas
#define alignas(N) _tl_orig_alignas((N) <= 64 ? (N) : 64)
#include <cuda.h>
#undef alignas
#define alignas _tl_orig_alignas
#endif
#include <tl_templates/cuda/instruction/wgmma.h>
#include <tl_templates/cuda/intrin.h>
#include <tl_templates/cuda/barrier.h>
#include <tl_templates/cuda/copy_sm90.h>
#include <math_constants.h>
#include <tl_templates/cuda/reduce.h>
#include <tl_templates/cuda/scan.h>
#include <tl_templates/cuda/ldsm.h>
#include <tl_templates/cuda/threadblock_swizzle.h>
#include <tl_templates/cuda/debug.h>
#ifdef ENABLE_BF16
#include <tl_templates/cuda/cuda_bf16_fallbacks.cuh>
#endif

extern "C" __global__ void main_kernel(__grid_constant__ const CUtensorMap KV_desc, __grid_constant__ const CUtensorMap K_pe_desc, half_t* __restrict__ Output, __grid_constant__ const CUtensorMap Q_desc, __grid_constant__ const CUtensorMap Q_pe_desc);
extern "C" __global__ void __launch_bounds__(384, 1) main_kernel(__grid_constant__ const CUtensorMap KV_desc, __grid_constant__ const CUtensorMap K_pe_desc, half_t* __restrict__ Output, __grid_constant__ const CUtensorMap Q_desc, __grid_constant__ const CUtensorMap Q_pe_desc) {
  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  void* O_shared = ((void*)((char*)buf_dyn_shmem + 0));
  void* Q_shared = ((void*)((char*)buf_dyn_shmem + 0));
  void* Q_pe_shared = ((void*)((char*)buf_dyn_shmem + 65536));
  void* KV_shared = ((void*)((char*)buf_dyn_shmem + 73728));
  void* K_pe_shared = ((void*)((char*)buf_dyn_shmem + 204800));
  void* S_shared = ((void*)((char*)buf_dyn_shmem + 221184));
  void* workspace = ((void*)((char*)buf_dyn_shmem + 229376));
  void* workspace_1 = ((void*)((char*)buf_dyn_shmem + 230400));
  __shared__ __align__(16) uint64_t mbarrier_mem[10];
  auto mbarrier = reinterpret_cast<Barrier*>(mbarrier_mem);
  float acc_o[128];
  float logsum[2];
  float scores_max[2];
  float acc_s[16];
  float scores_max_prev[2];
  float scores_max_clear[2];
  float scores_scale[2];
  float scores_sum[2];
  if (tl::tl_shuffle_elect<0>()) {
    tl::prefetch_tma_descriptor(Q_desc);
    tl::prefetch_tma_descriptor(Q_pe_desc);
    tl::prefetch_tma_descriptor(KV_desc);
    tl::prefetch_tma_descriptor(K_pe_desc);
  }
  if (tl::tl_shuffle_elect<0>()) {
    mbarrier[0].init(1);
    mbarrier[1].init(1);
    mbarrier[2].init(1);
    mbarrier[3].init(1);
    mbarrier[4].init(256);
    mbarrier[5].init(256);
    mbarrier[6].init(256);
    mbarrier[7].init(256);
    mbarrier[8].init(1);
    mbarrier[9].init(1);
  }
  tl::fence_barrier_init();
  __syncthreads();
  if (tl::tl_shuffle_elect<384>()) {
    mbarrier[8].arrive_and_expect_tx(65536);
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
      tl::tma_load(Q_desc, mbarrier[8], (&(((half_t*)Q_shared)[(i * 4096)])), (i * 64), (((int)blockIdx.x) * 64), ((int)blockIdx.y));
    }
    mbarrier[9].arrive_and_expect_tx(8192);
    tl::tma_load(Q_pe_desc, mbarrier[9], (&(((half_t*)Q_pe_shared)[0])), 0, (((int)blockIdx.x) * 64), ((int)blockIdx.y));
  }
  __syncthreads();
  if (((int)threadIdx.x) < 128) {
    tl::warpgroup_reg_dealloc<24>();
    for (int k = 0; k < 128; ++k) {
      mbarrier[((k & 1) + 4)].wait((((k & 3) >> 1) ^ 1));
      if (tl::tl_shuffle_elect<128>()) {
        mbarrier[(k & 1)].arrive_and_expect_tx(65536);
        #pragma unroll
        for (int i_1 = 0; i_1 < 8; ++i_1) {
          tl::tma_load(KV_desc, mbarrier[(k & 1)], (&(((half_t*)KV_shared)[(((k & 1) * 32768) + (i_1 * 4096))])), (i_1 * 64), (k * 64), 0, ((int)blockIdx.y));
        }
      }
      mbarrier[((k & 1) + 6)].wait((((k & 3) >> 1) ^ 1));
      if (tl::tl_shuffle_elect<128>()) {
        mbarrier[((k & 1) + 2)].arrive_and_expect_tx(8192);
        tl::tma_load(K_pe_desc, mbarrier[((k & 1) + 2)], (&(((half_t*)K_pe_shared)[((k & 1) * 4096)])), 0, (k * 64), 0, ((int)blockIdx.y));
      }
    }
  } else {
    tl::warpgroup_reg_alloc<240>();
    #pragma unroll
    for (int i_2 = 0; i_2 < 32; ++i_2) {
      float broadcast_var = 0x0p+0f/*0.000000e+00*/;
      *(float4*)(acc_o + (i_2 * 4)) = make_float4(broadcast_var, broadcast_var, broadcast_var, broadcast_var);
    }
    float broadcast_var_1 = 0x0p+0f/*0.000000e+00*/;
    *(float2*)(logsum + 0) = make_float2(broadcast_var_1, broadcast_var_1);
    float broadcast_var_2 = -CUDART_INF_F;
    *(float2*)(scores_max + 0) = make_float2(broadcast_var_2, broadcast_var_2);
    for (int k_1 = 0; k_1 < 128; ++k_1) {
      #pragma unroll
      for (int i_3 = 0; i_3 < 4; ++i_3) {
        float broadcast_var_3 = 0x0p+0f/*0.000000e+00*/;
        *(float4*)(acc_s + (i_3 * 4)) = make_float4(broadcast_var_3, broadcast_var_3, broadcast_var_3, broadcast_var_3);
      }
      if (k_1 == 0) {
        mbarrier[8].wait(0);
      }
      mbarrier[(k_1 & 1)].wait(((k_1 & 3) >> 1));
      {
        tl::GmmaDescriptor desc_a;
        tl::GmmaDescriptor desc_b;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a, (&(((half_t*)Q_shared)[0])));
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b, (&(((half_t*)KV_shared)[0])));
        tl::increase_descriptor_offset<int>(desc_b, ((k_1 & 1) * 65536));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_s + 0), 16);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki = 0; ki < 32; ++ki) {
          tl::wgmma_ss<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 32, 16, false, false, 1, 1>(uint64_t(desc_a + ((((ki >> 2) * 8192) + ((ki & 3) * 32)) >> 4)), uint64_t(desc_b + (((((ki >> 2) * 8192) + ((((((int)threadIdx.x) >> 7) + 1) & 1) * 4096)) + ((ki & 3) * 32)) >> 4)), ((uint32_t*)(acc_s + 0)), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_s + 0), 16);
      }
      if (k_1 == 0) {
        mbarrier[9].wait(0);
      }
      mbarrier[((k_1 & 1) + 2)].wait(((k_1 & 3) >> 1));
      {
        tl::GmmaDescriptor desc_a_1;
        tl::GmmaDescriptor desc_b_1;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a_1, (&(((half_t*)Q_pe_shared)[0])));
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_1, (&(((half_t*)K_pe_shared)[0])));
        tl::increase_descriptor_offset<int>(desc_b_1, ((k_1 & 1) * 8192));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_s + 0), 16);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_1 = 0; ki_1 < 4; ++ki_1) {
          tl::wgmma_ss<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 32, 16, false, false, 1, 1>(uint64_t(desc_a_1 + ((ki_1 * 32) >> 4)), uint64_t(desc_b_1 + ((((((((int)threadIdx.x) >> 7) + 1) & 1) * 4096) + (ki_1 * 32)) >> 4)), ((uint32_t*)(acc_s + 0)), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_s + 0), 16);
      }
      mbarrier[((k_1 & 1) + 6)].arrive();
      *(float2*)(scores_max_prev + 0) = *(float2*)(scores_max + 0);
      float broadcast_var_4 = -CUDART_INF_F;
      *(float2*)(scores_max + 0) = make_float2(broadcast_var_4, broadcast_var_4);
      #pragma unroll
      for (int i_4 = 0; i_4 < 2; ++i_4) {
        scores_max_clear[i_4] = -CUDART_INF_F;
        #pragma unroll
        for (int rv = 0; rv < 8; ++rv) {
          scores_max_clear[i_4] = max(scores_max_clear[i_4], acc_s[((((rv & 3) * 4) + (i_4 * 2)) + (rv >> 2))]);
        }
        tl::__sync_thread_partial(3, 256);
        scores_max_clear[i_4] = tl::AllReduce<tl::MaxOp, 256, 128, 128, tl::NamedBarrier<256>>::run(scores_max_clear[i_4], (&(((float*)workspace_1)[0])));
        scores_max_clear[i_4] = tl::AllReduce<tl::MaxOp, 4, 1, 128, tl::NamedBarrier<256>>::run(scores_max_clear[i_4]);
        scores_max[i_4] = max(scores_max[i_4], scores_max_clear[i_4]);
      }
      float2 __1;
        float2 v_ = *(float2*)(scores_max + 0);
        float2 v__1 = *(float2*)(scores_max_prev + 0);
        __1.x = max(v_.x, v__1.x);
        __1.y = max(v_.y, v__1.y);
      *(float2*)(scores_max + 0) = __1;
      float broadcast_var_5 = 0x1.ec709dbe8903ep-5f/*6.011229e-02*/;
      float broadcast_var_6 = 0x1.ec709dbe8903ep-5f/*6.011229e-02*/;
      float2 __2;
      float2 __3;
        float2 __4;
          float2 v__2 = *(float2*)(scores_max_prev + 0);
          float2 v__3 = make_float2(broadcast_var_5, broadcast_var_5);
          __4.x = (v__2.x*v__3.x);
          __4.y = (v__2.y*v__3.y);
        float2 __5;
          float2 v__4 = *(float2*)(scores_max + 0);
          float2 v__5 = make_float2(broadcast_var_6, broadcast_var_6);
          __5.x = (v__4.x*v__5.x);
          __5.y = (v__4.y*v__5.y);
        __3.x = (__4.x-__5.x);
        __3.y = (__4.y-__5.y);
      __2.x = exp2f(__3.x);
      __2.y = exp2f(__3.y);
      *(float2*)(scores_scale + 0) = __2;
      #pragma unroll
      for (int i_5 = 0; i_5 < 8; ++i_5) {
        float broadcast_var_7 = 0x1.ec709dbe8903ep-5f/*6.011229e-02*/;
        float2 __6;
        float2 __7;
          float2 __8;
            float2 v__6 = *(float2*)(acc_s + (i_5 * 2));
            float2 v__7 = make_float2(broadcast_var_7, broadcast_var_7);
            __8.x = (v__6.x*v__7.x);
            __8.y = (v__6.y*v__7.y);
          float2 v__8 = make_float2((scores_max[(i_5 & 1)] * 0x1.ec709dbe8903ep-5f/*6.011229e-02*/), (scores_max[(i_5 & 1)] * 0x1.ec709dbe8903ep-5f/*6.011229e-02*/));
          __7.x = (__8.x-v__8.x);
          __7.y = (__8.y-v__8.y);
        __6.x = exp2f(__7.x);
        __6.y = exp2f(__7.y);
        *(float2*)(acc_s + (i_5 * 2)) = __6;
      }
      #pragma unroll
      for (int i_6 = 0; i_6 < 2; ++i_6) {
        scores_sum[i_6] = 0x0p+0f/*0.000000e+00*/;
        #pragma unroll
        for (int rv_1 = 0; rv_1 < 8; ++rv_1) {
          scores_sum[i_6] = (scores_sum[i_6] + acc_s[((((rv_1 & 3) * 4) + (i_6 * 2)) + (rv_1 >> 2))]);
        }
        tl::__sync_thread_partial(3, 256);
        scores_sum[i_6] = tl::AllReduce<tl::SumOp, 256, 128, 128, tl::NamedBarrier<256>>::run(scores_sum[i_6], (&(((float*)workspace)[0])));
        scores_sum[i_6] = tl::AllReduce<tl::SumOp, 4, 1, 128, tl::NamedBarrier<256>>::run(scores_sum[i_6]);
      }
      tl::__sync_thread_partial(3, 256);
      #pragma unroll
      for (int i_7 = 0; i_7 < 2; ++i_7) {
        tl::ptx_stmatrix_m8n8_x4((&(((half_t*)S_shared)[(((((((((int)threadIdx.x) & 127) >> 5) * 1024) + ((((int)threadIdx.x) & 15) * 64)) + (((((((int)threadIdx.x) >> 7) + ((((int)threadIdx.x) & 7) >> 2)) + 1) & 1) * 32)) + (((((((int)threadIdx.x) & 3) >> 1) + i_7) & 1) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + (((int)threadIdx.x) & 1)) & 1) * 8))])), __pack_half2(((half_t)acc_s[(i_7 * 8)]), ((half_t)acc_s[((i_7 * 8) + 1)])), __pack_half2(((half_t)acc_s[((i_7 * 8) + 2)]), ((half_t)acc_s[((i_7 * 8) + 3)])), __pack_half2(((half_t)acc_s[((i_7 * 8) + 4)]), ((half_t)acc_s[((i_7 * 8) + 5)])), __pack_half2(((half_t)acc_s[((i_7 * 8) + 6)]), ((half_t)acc_s[((i_7 * 8) + 7)])));
      }
      float2 __9;
        float2 __10;
          float2 v__9 = *(float2*)(logsum + 0);
          float2 v__10 = *(float2*)(scores_scale + 0);
          __10.x = (v__9.x*v__10.x);
          __10.y = (v__9.y*v__10.y);
        float2 v__11 = *(float2*)(scores_sum + 0);
        __9.x = (__10.x+v__11.x);
        __9.y = (__10.y+v__11.y);
      *(float2*)(logsum + 0) = __9;
      #pragma unroll
      for (int i_8 = 0; i_8 < 64; ++i_8) {
        float2 __11;
          float2 v__12 = *(float2*)(acc_o + (i_8 * 2));
          float2 v__13 = make_float2(scores_scale[(i_8 & 1)], scores_scale[(i_8 & 1)]);
          __11.x = (v__12.x*v__13.x);
          __11.y = (v__12.y*v__13.y);
        *(float2*)(acc_o + (i_8 * 2)) = __11;
      }
      {
        tl::GmmaDescriptor desc_a_2;
        tl::GmmaDescriptor desc_b_2;
        tl::__sync_thread_partial(3, 256);
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a_2, (&(((half_t*)S_shared)[0])));
        tl::initialize_wgmma_descriptor<1, 512, 64>(desc_b_2, (&(((half_t*)KV_shared)[0])));
        tl::increase_descriptor_offset<int>(desc_b_2, ((k_1 & 1) * 65536));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_o + 0), 128);
        tl::warpgroup_arrive();
        tl::fence_proxy_async();
        #pragma unroll
        for (int ki_2 = 0; ki_2 < 4; ++ki_2) {
          tl::wgmma_ss<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 256, 16, false, true, 1, 1>(uint64_t(desc_a_2 + ((ki_2 * 32) >> 4)), uint64_t(desc_b_2 + ((((((((int)threadIdx.x) >> 7) + 1) & 1) * 32768) + (ki_2 * 2048)) >> 4)), ((uint32_t*)(acc_o + 0)), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(acc_o + 0), 128);
      }
      mbarrier[((k_1 & 1) + 4)].arrive();
    }
    #pragma unroll
    for (int i_9 = 0; i_9 < 64; ++i_9) {
      float2 __12;
        float2 v__14 = *(float2*)(acc_o + (i_9 * 2));
        float2 v__15 = make_float2(logsum[(i_9 & 1)], logsum[(i_9 & 1)]);
        __12.x = (v__14.x/v__15.x);
        __12.y = (v__14.y/v__15.y);
      *(float2*)(acc_o + (i_9 * 2)) = __12;
    }
    tl::__sync_thread_partial(3, 256);
    #pragma unroll
    for (int i_10 = 0; i_10 < 16; ++i_10) {
      tl::ptx_stmatrix_m8n8_x4((&(((half_t*)O_shared)[((((((((((int)threadIdx.x) & 127) >> 5) * 8192) + ((((int)threadIdx.x) & 15) * 512)) + ((((int)threadIdx.x) >> 7) * 256)) + (i_10 * 16)) + (((((int)threadIdx.x) & 31) >> 4) * 8)) - 256)])), __pack_half2(((half_t)acc_o[(i_10 * 8)]), ((half_t)acc_o[((i_10 * 8) + 1)])), __pack_half2(((half_t)acc_o[((i_10 * 8) + 2)]), ((half_t)acc_o[((i_10 * 8) + 3)])), __pack_half2(((half_t)acc_o[((i_10 * 8) + 4)]), ((half_t)acc_o[((i_10 * 8) + 5)])), __pack_half2(((half_t)acc_o[((i_10 * 8) + 6)]), ((half_t)acc_o[((i_10 * 8) + 7)])));
    }
    tl::__sync_thread_partial(3, 256);
    if (tl::tl_shuffle_elect<256>()) {
      tl::fence_proxy_async();
      tl::tma_store((&(Output[((((int)blockIdx.y) * 65536) + (((int)blockIdx.x) * 32768))])), (&(((half_t*)O_shared)[0])), 65536);
      tl::tma_store_arrive();
      tl::tma_store_wait<0, true>();
    }
  }
}

