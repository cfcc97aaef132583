#!/usr/bin/env python3
"""Makes tests/data/golden/fp8_cast_stochastic_fuse: the reference's fp8-cast LoRA fuse on CUDA.

The reference (Lightricks/LTX-2 at 400fd31, ltx_core.quantization.fp8_cast.fuse_cast_fp8_weight)
fuses a LoRA into an F8_E4M3 weight on CUDA with its Triton kernel fused_add_round_kernel and seed 0:
the weight and the bf16 delta added in float16, a stochastic rounding step of Triton's Philox
tl.rand(0, element index), the result stored in bf16 and then cast to F8_E4M3. There is no GPU
here, so the reference's own launcher (fused_add_round_launch) runs its kernel through Triton's
interpreter (TRITON_INTERPRET=1) on CPU tensors: the same kernel source. Two interpreter details
differ from a GPU run and are handled here: its float32 -> bfloat16 cast truncates (numpy has no
bfloat16; triton/runtime/interpreter.py cast_impl passes no rounding mode), where the GPU's
compiled cast rounds to nearest even (cvt.rn.bf16.f32), so this script makes that one cast round
to nearest even through torch; and its float16 add goes through float32 (numpy), which can round
twice where the GPU rounds once: the script counts the elements where that could matter and
records the count. The CPU fallback (a plain bf16 add, then the cast) is recorded too.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src python3 gen_fp8_cast_stochastic_fuse.py OUT_DIR
"""
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import numpy as np  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

from ltx_core.quantization.fp8_cast import fused_add_round_launch  # noqa: E402

_cast_impl = interpreter.InterpreterBuilder.cast_impl


def _cast_rounding_bf16_to_nearest(self, src, dst_type):
    """The interpreter's cast, with float32 -> bfloat16 rounded to nearest even as on the GPU."""
    if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
        rounded = torch.from_numpy(np.ascontiguousarray(src.data)).to(torch.bfloat16)
        return interpreter.TensorHandle(rounded.view(torch.int16).numpy().view(np.uint16), dst_type.scalar)
    return _cast_impl(self, src, dst_type)


interpreter.InterpreterBuilder.cast_impl = _cast_rounding_bf16_to_nearest


def main() -> None:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(1234)
    rows, cols = 96, 80  # 7,680 elements: several of the kernel's 1,024-element blocks, the last one partial
    weight = (torch.randn(rows, cols, generator=g) * 2.0).to(torch.float8_e4m3fn)
    weight[0, :8] = 0  # zeros: their rounding step is 0
    # A LoRA delta of the size fp8 steps have, and a few large enough to cross several of them.
    delta = (torch.randn(rows, cols, generator=g) * 0.05).to(torch.bfloat16)
    delta[1, :4] = torch.tensor([3.0, -5.0, 100.0, -0.0], dtype=torch.bfloat16)

    target = delta.clone()
    fused_add_round_launch(target, weight, seed=0)  # target: the kernel's bf16 result, in place
    stochastic = target.to(torch.float8_e4m3fn)
    deterministic = (delta + weight.to(torch.bfloat16)).to(torch.float8_e4m3fn)

    save_file(
        {
            "in.weight": weight.view(torch.uint8).to(torch.int64),
            "in.delta": delta.to(torch.float32),
            "out.stochastic_bf16": target.to(torch.float32),
            "out.stochastic": stochastic.to(torch.float32),
            "out.deterministic": deterministic.to(torch.float32),
        },
        os.path.join(out_dir, "io.safetensors"),
        metadata={"case": "fp8_cast_stochastic_fuse"},
    )
    changed = int((stochastic.to(torch.float32) != deterministic.to(torch.float32)).sum())
    # Where float16(float32(w + d)) may differ from float16(w + d): the float32 sum inexact.
    w64, d64 = weight.to(torch.float64), delta.to(torch.float16).to(torch.float64)
    sum32_inexact = int(((w64 + d64) != (w64 + d64).to(torch.float32).to(torch.float64)).sum())
    case = {
        "what": "fp8-cast LoRA fuse on CUDA: ltx_core.quantization.fp8_cast.fused_add_round_launch"
        "(delta_bf16, weight_fp8, seed=0), then .to(float8_e4m3fn)",
        "reference": "Lightricks/LTX-2 400fd31, torch " + torch.__version__ + ", Triton interpreter",
        "inputs": {
            "in.weight": "F8_E4M3 codes (as int64 bytes) [96, 80]",
            "in.delta": "the LoRA delta in bf16 (stored as float32) [96, 80]",
        },
        "outputs": {
            "out.stochastic_bf16": "the kernel's bf16 result (float32 here)",
            "out.stochastic": "that cast to F8_E4M3 (values as float32): the fused weight",
            "out.deterministic": "the CPU fallback: bf16(delta + weight) cast to F8_E4M3",
        },
        "elements_where_the_roundings_differ": changed,
        "interpreter": "float32 -> bfloat16 cast rounded to nearest even (as cvt.rn.bf16.f32 on the GPU); "
        "float16 add through float32, inexact at " + str(sum32_inexact) + " elements",
        "tolerance": {"atol": 0.0, "rtol": 0.0},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=2)
        f.write("\n")
    print("stochastic differs from deterministic at", changed, "of", weight.numel())


if __name__ == "__main__":
    main()
