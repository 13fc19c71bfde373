// trainer/selective_scan.h — the Mamba selective scan with a hand-written
// backward, as one autograd node (no per-step graph nodes).
//
// Shapes (batch B, length L, channels Dm, state N):
//   u     [B, L, Dm]  input
//   delta [B, L, Dm]  step sizes, already softplus'ed (> 0)
//   A     [Dm, N]     state matrix (diagonal per channel), = -exp(A_log)
//   Bm    [B, L, N]   input → state, per step
//   Cm    [B, L, N]   state → output, per step
//   D     [Dm]        skip
// Recurrence, with h_{-1} = 0:
//   h_t = exp(delta_t * A) ⊙ h_{t-1} + (delta_t * u_t) ⊗ B_t     (h_t is [Dm, N])
//   y_t = h_t · C_t + D ⊙ u_t                                       → y [B, L, Dm]
//
// All six tensors must be on one device and share one floating dtype
// (float32 or float64); any strides are accepted (they are made contiguous
// once). Shape, device or dtype mismatches throw c10::Error.
//
// Devices: on the CPU, selective_scan runs the hand-written kernels below.
// Elsewhere (CUDA) it runs selective_scan_ops, the same recurrence as a loop
// over time in torch ops, differentiated by autograd (L is short, so the
// loop's launches are cheap next to a GPU kernel's work per step).
//
// The kernels run in parallel over the
// batch (at::parallel_for); every output element is computed by one thread in
// a fixed order, so results do not depend on the thread count.
//
// Precision: float64 is exact up to rounding (use it for gradient checks);
// float32 uses a vectorised exp with relative error < 1e-7 and float
// accumulators (8 partial sums over channels; double across the batch).
// The hot loops are built for AVX2 and for baseline x86-64, chosen at load
// time; both give bit-identical results.
//
// Memory: forward keeps only its inputs; backward recomputes each sample's
// states into a per-thread buffer of (L+1)·Dm·N values before the reverse
// sweep (L is short: ≤ ~72).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <torch/torch.h>

namespace tcl::trainer {

// Differentiable scan: gradients flow to all six inputs. Not twice
// differentiable (the backward is a kernel, not a graph).
torch::Tensor selective_scan(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                             const torch::Tensor& Bm, const torch::Tensor& Cm, const torch::Tensor& D);

// The recurrence in plain torch ops on any device, differentiable by
// autograd (what selective_scan runs off the CPU). Exact exp, so it matches
// the kernels to float rounding. Memory: O(B·L·Dm·N) for the per-step
// decays and inputs, and as much again kept for the backward.
torch::Tensor selective_scan_ops(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                                 const torch::Tensor& Bm, const torch::Tensor& Cm, const torch::Tensor& D);

// The raw CPU kernels, without autograd (for the inference path, tests, bench/).
torch::Tensor selective_scan_forward(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                                     const torch::Tensor& Bm, const torch::Tensor& Cm, const torch::Tensor& D);

struct SelectiveScanGrads {
  torch::Tensor u, delta, A, Bm, Cm, D;  // same shapes as the inputs
};

// Gradients of sum(grad_y ⊙ y) with respect to each input.
SelectiveScanGrads selective_scan_backward(const torch::Tensor& grad_y, const torch::Tensor& u,
                                           const torch::Tensor& delta, const torch::Tensor& A, const torch::Tensor& Bm,
                                           const torch::Tensor& Cm, const torch::Tensor& D);

}  // namespace tcl::trainer
