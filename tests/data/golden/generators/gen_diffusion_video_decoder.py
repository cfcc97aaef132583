#!/usr/bin/env python3
"""Golden case for LTX-2.5's diffusion video decoder (vae._class_name "CausalDiffusionVAE",
ltx_core.model.video_vae.DiffusionVideoDecoder): an untiled decode, as the reference pipelines run it.

A TINY decoder whose config has the real checkpoint's nested layout and key names (vae.encoder /
vae.decoder with "NADiffusionDecoder"'s fields, model_output_type "x0" at the vae level; tiny widths,
depths, kernels; "t_emb_dim" given, since the real 384 alone would be most of the file) with seeded
random weights, written as a real checkpoint carries them: keys "vae.decoder.*" with the fused
"attn.qkv.{weight,bias}", "t_embedder.mlp.{0,2}.*", static "gate_msa" / "gate_mlp" / "gate_ctx"
per diffusion block (folded into the linears at load), "vae.per_channel_statistics.*", bf16, the
config in the metadata. It is loaded back by the reference pipelines' own ``VideoDecoder`` block
(ltx_pipelines.utils.blocks: metadata -> VideoDecoderConfigurator, the checkpoint's SDOps, and the
default ``diffvae_optimization`` DiffVAEMode.CHUNKED_EAGER). natten is not installed here, so the
reference resolves that mode to its eager SDPA neighborhood attention (fallback_na/eager.py, NATTEN
na3d semantics: each query's window shifted inward at the volume's borders), in the chunked block
(deferred stage-4 context; W-chunked residual attention, w_chunks 4, halo kW // 2, edge-replicated W
borders). The decode is ``decoder(latent, generator)`` (forward: _decode_pixels untiled), float32
on the CPU, twice: with the config's 2 steps (x0 -> velocity Euler steps) and with 1 step (the real
config's single x0 step). Every torch.randn draw is recorded (both runs draw the same tensor).

Writes <golden>/diffusion_video_decoder/{weights.safetensors, io.safetensors, case.json}.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_diffusion_video_decoder.py [<golden folder>]
"""

import json
import math
import os
import sys

import torch
from safetensors.torch import save_file

from ltx_core.model.video_vae.model_configurator import _build_diffusion_video_decoder
from ltx_core.model.video_vae.transformer import EagerSdpaAttention, NeighborhoodAttention3D
from ltx_core.model.video_vae.transformer.attention import natten_available
from ltx_pipelines.utils.blocks import VideoDecoder

WEIGHT_SEED = 25
LATENT_SEED = 26
NOISE_SEED = 27
LATENT_SHAPE = (1, 8, 2, 1, 1)  # padded to (3, 1, 2) latent cells by the decoder's size floor

ENCODER = {
    "_class_name": "Encoder", "dims": 3, "in_channels": 3, "out_channels": 8,
    "blocks": [["res_x", {"num_layers": 1}], ["compress_space_res", {"multiplier": 2}],
               ["compress_time_res", {"multiplier": 2}], ["compress_all_res", {"multiplier": 2}],
               ["compress_all_res", {"multiplier": 1}]],
    "patch_size": 4, "latent_log_var": "constant", "norm_layer": "pixel_norm", "spatial_padding_mode": "zeros",
}
DECODER = {
    "_class_name": "NADiffusionDecoder",
    "in_channels": 8,
    "out_channels": 3,
    "patch_size": 4,
    "head_dim": 16,
    "stage_channels": [64, 32, 32, 32, 16],
    "stage_depths": [1, 1, 1, 1, 2],
    "stage_kernels": [[3, 1, 1], [3, 1, 3], [3, 1, 3], [3, 3, 3], [3, 5, 5]],
    "upsamples": [[[1, 2, 2], 2], [[2, 1, 1], 1], [[2, 2, 2], 1], [[2, 2, 2], 2]],
    "spatial_padding_mode": "zeros",
    "resampler_kind": "linear",
    "stage5_kernel": [3, 5, 5],
    "timestep_scale_multiplier": 1000.0,
    "default_num_inference_steps": 2,
    "t_emb_dim": 32,
}
VAE = {"_class_name": "CausalDiffusionVAE", "encoder": ENCODER, "decoder": DECODER, "model_output_type": "x0"}


def randomize(model: torch.nn.Module, seed: int) -> dict:
    """Seeded weights in sorted-name order: linears N(0, 1/fan_in), biases 0.1 N, norm weights
    1 + 0.1 N, scale-shift tables 0.3 N, statistics mean 0.2 N and std 1 + 0.2 |N|; bf16-rounded."""
    g = torch.Generator().manual_seed(seed)
    sd = model.state_dict()
    out = {}
    for name in sorted(sd):
        t = sd[name]
        n = torch.randn(t.shape, generator=g, dtype=torch.float32)
        if "std-of-means" in name:
            v = 1.0 + 0.2 * n.abs()
        elif "mean-of-means" in name:
            v = 0.2 * n
        elif "norm" in name and name.endswith(".weight"):
            v = 1.0 + 0.1 * n
        elif "scale_shift_table" in name:
            v = 0.3 * n
        elif name.endswith(".bias"):
            v = 0.1 * n
        elif t.dim() == 2:
            v = n / math.sqrt(t.shape[1])
        else:
            raise RuntimeError(f"unexpected tensor {name} {tuple(t.shape)}")
        out[name] = v.to(torch.bfloat16)
    return out


def to_checkpoint(sd: dict, n_diff_blocks: int, seed: int) -> dict:
    """Module names -> the published file's: fused qkv, t_embedder.mlp.{0,2}, gates per diff block."""
    ck = {}
    for name, t in sd.items():
        if name.startswith("per_channel_statistics."):
            ck["vae." + name] = t
            continue
        if ".attn.qkv.to_" in name:
            if ".to_q." not in name:
                continue
            leaf = name.rsplit(".", 1)[1]
            base = name.split(".attn.qkv.")[0] + ".attn.qkv."
            fused = torch.cat([sd[base + f"to_{p}.{leaf}"] for p in "qkv"], dim=0)
            ck["vae.decoder." + base + leaf] = fused
            continue
        name = name.replace("t_embedder.timestep_embedder.linear_1.", "t_embedder.mlp.0.")
        name = name.replace("t_embedder.timestep_embedder.linear_2.", "t_embedder.mlp.2.")
        ck["vae.decoder." + name] = t
    g = torch.Generator().manual_seed(seed)
    dim = sd["diff_blocks.0.attn.proj.bias"].shape[0]
    for i in range(n_diff_blocks):
        for gate in ("gate_msa", "gate_mlp", "gate_ctx"):
            v = 1.0 + 0.25 * torch.randn(dim, generator=g)
            ck[f"vae.decoder.diff_blocks.{i}.{gate}"] = v.to(torch.bfloat16)
    return ck


class Recorder:
    """Wraps torch.randn (the decoder's noise draws) and the decoder's stage methods."""

    def __init__(self, decoder):
        self.decoder = decoder
        self.noise = []
        self.mid = {}
        self.step = 0

    def __enter__(self):
        self._randn = torch.randn

        def randn(*args, **kwargs):
            t = self._randn(*args, **kwargs)
            self.noise.append(t.clone())
            return t

        torch.randn = randn
        d = self.decoder
        self._saved = {k: getattr(d, k) for k in ("forward_stages_1_to_3", "forward_stage_4",
                                                   "forward_diff_step_deferred")}
        orig = self._saved

        def s123(*a, **k):
            out = orig["forward_stages_1_to_3"](*a, **k)
            self.mid["mid.stage4_input"] = out.clone()
            return out

        def s4(*a, **k):
            out = orig["forward_stage_4"](*a, **k)
            self.mid["mid.context"] = out.clone()
            return out

        def step(x, stage4_feat, t, **k):
            i = self.step
            self.mid[f"mid.step{i}.x"] = x.clone()
            t_emb = d.t_embedder(d.timestep_scale_multiplier * t, hidden_dtype=x.dtype)
            self.mid[f"mid.step{i}.t_emb"] = t_emb.clone()
            self.mid[f"mid.step{i}.modulation"] = torch.stack([m.reshape(m.shape[0], -1)
                                                               for m in d.shared_adaln(t_emb)], dim=1)
            out = orig["forward_diff_step_deferred"](x, stage4_feat, t, **k)
            self.mid[f"mid.step{i}.model_out"] = out.clone()
            self.step += 1
            return out

        d.forward_stages_1_to_3, d.forward_stage_4, d.forward_diff_step_deferred = s123, s4, step
        return self

    def __exit__(self, *exc):
        torch.randn = self._randn
        for k, v in self._saved.items():
            setattr(self.decoder, k, v)


def stats(t):
    return {"shape": list(t.shape), "mean": t.mean().item(), "std": t.std().item(), "absmax": t.abs().max().item()}


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, "diffusion_video_decoder")
    os.makedirs(out_dir, exist_ok=True)
    assert not natten_available(), "this case records the reference's no-natten (eager SDPA) attention path"

    shell = _build_diffusion_video_decoder(VAE)
    sd = randomize(shell, WEIGHT_SEED)
    ck = to_checkpoint(sd, len(shell.diff_blocks), WEIGHT_SEED + 100)
    weights_path = os.path.join(out_dir, "weights.safetensors")
    save_file({k: v.contiguous() for k, v in sorted(ck.items())}, weights_path,
              metadata={"config": json.dumps({"vae": VAE})})

    # The pipelines' own decoder block, default diffvae_optimization (CHUNKED_EAGER).
    block = VideoDecoder(weights_path, dtype=torch.float32, device=torch.device("cpu"))
    decoder = block._decoder_builder.build(device=torch.device("cpu"), dtype=torch.float32).eval()
    na = [m for m in decoder.modules() if isinstance(m, NeighborhoodAttention3D)]
    assert na and all(isinstance(m.attention_function, EagerSdpaAttention) for m in na)
    assert decoder.deferred_stage4_upsample
    w_chunks = {m.w_chunks for b in decoder.diff_blocks for m in b.modules() if isinstance(m, NeighborhoodAttention3D)}
    assert w_chunks == {4}, w_chunks
    assert type(decoder.diff_blocks[0]).__name__ == "ChunkedDiffusionNABlock"
    # The gate fold happened: the loaded proj weight is gate x the file's.
    g = ck["vae.decoder.diff_blocks.0.gate_msa"].float()
    raw = ck["vae.decoder.diff_blocks.0.attn.proj.weight"].float()
    assert torch.equal(decoder.diff_blocks[0].attn.proj.weight, (g[:, None] * raw).bfloat16().float())

    latent = torch.randn(LATENT_SHAPE, generator=torch.Generator().manual_seed(LATENT_SEED))
    rec = {"in.latent": latent}
    timesteps = decoder.default_inference_timesteps.tolist()
    with torch.inference_mode(), Recorder(decoder) as r:
        video = decoder(latent, torch.Generator().manual_seed(NOISE_SEED))
    assert len(r.noise) == 1
    rec["in.noise"] = r.noise[0]
    rec["out.video"] = video
    rec["mid.stage4_input"] = r.mid["mid.stage4_input"]
    rec["mid.context"] = r.mid["mid.context"]
    for i in range(len(timesteps)):
        rec[f"mid.step{i}.t_emb"] = r.mid[f"mid.step{i}.t_emb"]
        rec[f"mid.step{i}.modulation"] = r.mid[f"mid.step{i}.modulation"]
    # The first step's model output (x0 prediction), first pixel frame only (the whole is 400 KB).
    rec["mid.step0.model_out_frame0"] = r.mid["mid.step0.model_out"][:, :, :1].contiguous()

    # decode_video (what the pipelines consume) is the same decode packed as [F, H, W, 3] in [0, 1].
    with torch.inference_mode():
        frames = torch.cat(list(decoder.decode_video(latent, None, torch.Generator().manual_seed(NOISE_SEED))))
    assert torch.equal(frames, ((video[0] + 1) * 0.5).clamp(0, 1).permute(1, 2, 3, 0))

    # The real config's single x0 step (default_num_inference_steps 1): the noise is drawn at the
    # stage-5 shape, which here equals the full shape, so the same seed draws the same tensor.
    decoder.default_inference_timesteps = torch.linspace(1.0, 1.0, 1)
    with torch.inference_mode(), Recorder(decoder) as r1:
        video1 = decoder(latent, torch.Generator().manual_seed(NOISE_SEED))
    assert len(r1.noise) == 1 and torch.equal(r1.noise[0], rec["in.noise"])
    rec["out.video_one_step"] = video1

    rec = {k: v.float().contiguous() for k, v in rec.items()}
    absmax = max(rec["out.video"].abs().max().item(), rec["out.video_one_step"].abs().max().item())
    what = "CausalDiffusionVAE decoder (DiffusionVideoDecoder), untiled decode"
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_diffusion_video_decoder.py",
        "reference": "Lightricks/LTX-2 ltx-core / ltx-pipelines 1.2.0",
        "how_run": {"device": "cpu", "dtype": "float32", "torch": torch.__version__,
                    "weight_seed": WEIGHT_SEED, "latent_seed": LATENT_SEED, "noise_seed": NOISE_SEED},
        "python_call": "decoder = ltx_pipelines.utils.blocks.VideoDecoder(weights, float32, cpu)._decoder_builder"
                       ".build(cpu, float32); decoder(latent, torch.Generator().manual_seed(noise_seed))",
        "attention_path": "DiffVAEMode.CHUNKED_EAGER resolved without natten: ChunkedDiffusionNABlock (deferred "
                          "stage-4 context, W-chunked residual attention w_chunks=4, halo kW//2, edge-replicated W "
                          "borders), EagerSdpaAttention (na3d semantics) everywhere",
        "config": VAE,
        "timesteps": timesteps,
        "one_step_run": {"default_num_inference_steps": 1, "timesteps": [1.0], "output": "out.video_one_step",
                         "noise": "in.noise (the same draw)"},
        "noise": "in.noise: the decoder's one torch.randn draw, [B, 3, F, H, W] of the size-floored latent "
                 "(3, 1, 2 cells: 17 x 32 x 64 pixels)",
        "intermediates": {
            "mid.stage4_input": "forward_stages_1_to_3 output, channels-last [B, T, H, W, C] (ghost frames included)",
            "mid.context": "forward_stage_4 (deferred: stage-4 NA blocks, ghost frames cropped, before upsamples[3])",
            "mid.stepI.t_emb": "t_embedder(timestep_scale_multiplier * t_I)",
            "mid.stepI.modulation": "shared_adaln(t_emb): the 7 chunks [B, 7, C5]",
            "mid.step0.model_out_frame0": "first step's model output (x0), pixel frame 0: [B, 3, 1, H, W]",
        },
        "tolerance": {"atol": 1e-4 * absmax, "rtol": 1e-3, "min_cosine": 0.99999},
        "output_stats": {"out.video": stats(rec["out.video"]), "out.video_one_step": stats(rec["out.video_one_step"])},
        "tensors": {k: {"shape": list(v.shape), "dtype": "float32"} for k, v in sorted(rec.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(rec, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(json.dumps(case["output_stats"], indent=1))


if __name__ == "__main__":
    main()
