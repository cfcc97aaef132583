#!/usr/bin/env python3
"""Golden case for the tiled decode of LTX-2.5's diffusion video decoder (CausalDiffusionVAE,
ltx_core.model.video_vae.DiffusionVideoDecoder.tiled_decode) and for the decode tiling the
reference's pipelines pick for it (AUTO_TILING -> ltx_pipelines.utils.helpers.tiling_config_for_vae
-> diffusion_tiling.recommended_decode_tiling_config).

The decoder is the one of the "diffusion_video_decoder" case (its weights.safetensors, loaded by the
pipelines' own VideoDecoder block, default DiffVAEMode.CHUNKED_EAGER; natten absent, so the eager
SDPA neighborhood attention). Stages 1-3 run once on the whole latent; stages 4 and 5 (the sampling
loop) run per tile of the stage-4 grid, and the tiles' pixels are blended with their trapezoid
masks (divided by the summed masks where those are not complementary).

Runs, float32 on the CPU, every randn draw recorded:
- "a": the config's 2 steps, tiles frames 16/8, height 64/32, width 64/32 pixels (2 x 2 x 2 tiles,
  complementary masks): one noise draw of the full pixel shape, sliced per tile;
- "b": the same 2 steps, width tiles 48/32 only (4 tiles whose ramps overlap inside a tile, so the
  masks are not complementary and the blend divides by their sum); its one draw is a's (recorded
  once, as in.noise);
- "one_step": the real config's single x0 step (default_num_inference_steps 1) with a's tiles:
  every tile draws its own noise at its diffusion-stage shape, in tile order.
Each run's tiles are recorded too (stage-4 input boxes, pixel boxes, is-origin and trailing flags,
the three 1-D masks).

Recommendations: tiling_config_for_vae's arithmetic (diffvae_tiling_geometry_from_vae_config of the
checkpoint's config, estimate_diffusion_decoder_weight_bytes of the file, CHUNKED_EAGER) for several
video sizes and free-memory budgets, with this tiny config and with the configurator's default
(full-size) config; a budget that fits no tile records the reference's error.

Writes <golden>/diffusion_video_decoder_tiled/{io.safetensors, case.json}.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_diffusion_video_decoder_tiled.py [<golden folder>]
(torchaudio is stood in for when missing, as in gen_enhance_prompt_image.py.)
"""

import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import save_file

try:
    import torchaudio  # noqa: F401
except ImportError:
    # The reference imports torchaudio for its audio VAE only, which this case never runs.
    import importlib.machinery
    import types
    stand_in = types.ModuleType("torchaudio")
    stand_in.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = stand_in

from ltx_core.model.video_vae import diffusion_tiling
from ltx_core.model.video_vae.model_configurator import (
    diffvae_tiling_geometry_from_vae_config,
    estimate_diffusion_decoder_weight_bytes,
)
from ltx_core.model.video_vae.transformer.attention import natten_available
from ltx_core.model.video_vae.transformer.config import DiffVAEMode
from ltx_core.tiling import DimensionSizeConfig, TileSizeConfig, masks_are_complementary
from ltx_pipelines.utils.blocks import VideoDecoder

MODELS = "diffusion_video_decoder"
CASE = "diffusion_video_decoder_tiled"
LATENT_SEED = 36
NOISE_SEED = 37
LATENT_SHAPE = (1, 8, 3, 3, 3)  # 17 x 96 x 96 pixels; stage-4 grid 9 x 12 x 12
GiB = 1 << 30

RUNS = {
    "a": {"steps": 2, "tiling": {"frames": [16, 8], "height": [64, 32], "width": [64, 32]}},
    "b": {"steps": 2, "tiling": {"frames": [0, 0], "height": [0, 0], "width": [48, 32]}},
    "one_step": {"steps": 1, "tiling": {"frames": [16, 8], "height": [64, 32], "width": [64, 32]}},
}

# (height, width, frames, free bytes): tiny config; then the default config at full size.
TINY_RECOMMEND = [(96, 96, 17, 3 * GiB), (96, 96, 17, 2 * GiB + (4 << 20)), (96, 96, 17, 2 * GiB + (700 << 10)),
                  (512, 768, 49, 2 * GiB + (256 << 20)), (512, 768, 49, 2 * GiB + (96 << 20)), (96, 96, 17, 2 * GiB)]
DEFAULT_RECOMMEND = [(1024, 1536, 121, 80 * GiB), (1024, 1536, 121, 40 * GiB), (1024, 1536, 121, 16 * GiB),
                     (768, 1280, 121, 24 * GiB), (1024, 1536, 257, 24 * GiB), (1024, 1536, 121, 4 * GiB)]
DEFAULT_MODEL_BYTES = 700 << 20
# The full-size decoder: the configurator's defaults, with the two keys the tiling arithmetic requires.
DEFAULT_DECODER = {"stage_channels": [1024, 512, 256, 256, 128], "head_dim": 64}


def tiling_config(spec):
    def axis(v):
        return DimensionSizeConfig(tile_size=v[0], overlap=v[1]) if v[0] > 0 else DimensionSizeConfig()
    return TileSizeConfig(frames=axis(spec["frames"]), height=axis(spec["height"]), width=axis(spec["width"]))


class NoiseRecorder:
    def __enter__(self):
        self.draws = []
        self._randn = torch.randn

        def randn(*args, **kwargs):
            t = self._randn(*args, **kwargs)
            self.draws.append(t.clone())
            return t

        torch.randn = randn
        return self

    def __exit__(self, *exc):
        torch.randn = self._randn


def tile_records(decoder, latent, config):
    """The decode's schedule as _decode_pixels builds it (no latent size floor pad applies here)."""
    strides = [tuple(u.stride) for u in decoder.upsamples]
    s4 = diffusion_tiling.stage4_thw_from_latent(strides, *latent.shape[2:], drop_leading_frame=True)
    tiles = diffusion_tiling.prepare_tile_schedule(
        torch.Size([1, latent.shape[1], *s4]), config, upsample3_stride=tuple(decoder.upsamples[3].stride),
        patch_size=decoder.patch_size, min_tile_size=decoder.tile_min_sizes, tile_halos=decoder.tile_halos)
    out, masks = [], {}
    for i, tile in enumerate(tiles):
        def rng(s, n):
            a, b, _ = s.indices(n)
            return [a, b]
        full_px = [(latent.shape[2] - 1) * 8 + 1, latent.shape[3] * 32, latent.shape[4] * 32]
        rec = {"in": [rng(tile.in_coords[1 + a], s4[a]) for a in range(3)],
               "out": [rng(tile.out_coords[2 + a], full_px[a]) for a in range(3)],
               "is_origin": tile.in_coords[1].start in (0, None),
               "pad_trailing": tile.in_coords[1].indices(s4[0])[1] == s4[0]}
        out.append(rec)
        for a, name in enumerate("fhw"):
            masks[f"tile{i}.mask_{name}"] = tile.masks_1d[2 + a].float().clone()
    complementary = masks_are_complementary(
        tiles, [1, 3, (latent.shape[2] - 1) * 8 + 1, latent.shape[3] * 32, latent.shape[4] * 32])
    return out, masks, bool(complementary)


def recommend(vae_config, model_bytes, cases):
    geometry = diffvae_tiling_geometry_from_vae_config(vae_config)
    out = []
    for h, w, f, free in cases:
        rec = {"height": h, "width": w, "frames": f, "free_bytes": free, "model_bytes": model_bytes}
        try:
            t = diffusion_tiling.recommended_decode_tiling_config(
                **geometry, height=h, width=w, num_frames=f, mode=DiffVAEMode.CHUNKED_EAGER,
                free_bytes=free, model_bytes=model_bytes)
            rec["tiling"] = {"frames": [t.frames.tile_size, t.frames.overlap],
                             "height": [t.height.tile_size, t.height.overlap],
                             "width": [t.width.tile_size, t.width.overlap]}
        except ValueError as e:
            rec["error"] = str(e)
        out.append(rec)
    return out


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    assert not natten_available(), "this case records the reference's no-natten (eager SDPA) attention path"
    weights_path = os.path.join(golden, MODELS, "weights.safetensors")
    with safe_open(weights_path, framework="pt") as f:
        vae_config = json.loads(f.metadata()["config"])["vae"]

    block = VideoDecoder(weights_path, dtype=torch.float32, device=torch.device("cpu"))
    decoder = block._decoder_builder.build(device=torch.device("cpu"), dtype=torch.float32).eval()
    assert block.diffvae_optimization is DiffVAEMode.CHUNKED_EAGER and decoder.deferred_stage4_upsample

    latent = torch.randn(LATENT_SHAPE, generator=torch.Generator().manual_seed(LATENT_SEED))
    rec = {"in.latent": latent}
    runs = {}
    two_steps = decoder.default_inference_timesteps.clone()
    for name, run in RUNS.items():
        decoder.default_inference_timesteps = two_steps if run["steps"] == 2 else torch.linspace(1.0, 1.0, 1)
        assert decoder.default_inference_timesteps.numel() == run["steps"]
        config = tiling_config(run["tiling"])
        with torch.inference_mode(), NoiseRecorder() as noise:
            chunks = list(decoder.tiled_decode(latent, config, torch.Generator().manual_seed(NOISE_SEED)))
        video = torch.cat(chunks, dim=2)
        tiles, masks, complementary = tile_records(decoder, latent, config)
        if run["steps"] == 2:  # one draw of the full shape, the same seed: the same tensor
            assert len(noise.draws) == 1
            assert "in.noise" not in rec or torch.equal(rec["in.noise"], noise.draws[0])
            rec["in.noise"] = noise.draws[0]
        else:
            for i, t in enumerate(noise.draws):
                rec[f"in.{name}.noise{i}"] = t
        rec[f"out.{name}.video"] = video
        if name != "one_step":  # its tiles are a's
            rec.update({f"mid.{name}.{k}": v for k, v in masks.items()})
        runs[name] = {"steps": run["steps"], "tiling": run["tiling"], "noise_draws": len(noise.draws),
                      "chunks": [c.shape[2] for c in chunks], "masks_complementary": complementary,
                      "tiles": tiles}
    assert not runs["b"]["masks_complementary"] and runs["a"]["masks_complementary"]
    assert runs["one_step"]["noise_draws"] == len(runs["one_step"]["tiles"])

    recommendations = {
        "tiny": recommend(vae_config, estimate_diffusion_decoder_weight_bytes(weights_path), TINY_RECOMMEND),
        "default_config": recommend({"decoder": DEFAULT_DECODER}, DEFAULT_MODEL_BYTES, DEFAULT_RECOMMEND),
    }

    rec = {k: v.float().contiguous() for k, v in rec.items()}
    absmax = max(v.abs().max().item() for k, v in rec.items() if k.startswith("out."))
    what = "CausalDiffusionVAE tiled decode (DiffusionVideoDecoder.tiled_decode) and its recommended tiling"
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_diffusion_video_decoder_tiled.py",
        "reference": "Lightricks/LTX-2 at 400fd31 (ltx-core diffusion_tiling.py, diffusion_video_decoder.py; "
                     "ltx-pipelines utils/helpers.py tiling_config_for_vae)",
        "how_run": {"device": "cpu", "dtype": "float32", "torch": torch.__version__,
                    "latent_seed": LATENT_SEED, "noise_seed": NOISE_SEED},
        "models_from": MODELS,
        "python_call": "decoder.tiled_decode(latent, TileSizeConfig(...), torch.Generator().manual_seed(noise_seed)); "
                       "chunks concatenated over frames",
        "runs": runs,
        "recommendations": recommendations,
        "default_config": {"decoder": DEFAULT_DECODER},
        "recommend_mode": "DiffVAEMode.CHUNKED_EAGER without natten: stage-5 coefficient 5, 1 GiB safety",
        "tolerance": {"atol": 1e-4 * absmax, "rtol": 1e-3, "min_cosine": 0.99999},
        "tensors": {k: {"shape": list(v.shape), "dtype": "float32"} for k, v in sorted(rec.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(rec, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(json.dumps({k: {"draws": r["noise_draws"], "tiles": len(r["tiles"]), "chunks": r["chunks"],
                          "complementary": r["masks_complementary"]} for k, r in runs.items()}, indent=1))
    print(json.dumps(recommendations, indent=1))


if __name__ == "__main__":
    main()
