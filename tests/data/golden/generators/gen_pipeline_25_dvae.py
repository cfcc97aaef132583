#!/usr/bin/env python3
"""Golden case: an LTX-2.5 model set whose video VAE is the diffusion decoder (vae._class_name
"CausalDiffusionVAE", LTX-2.5's default), through the reference's distilled pipeline end to end.

Writes <golden>/pipeline_distilled_25_dvae/{video_vae.safetensors, mismatched_video_vae.safetensors,
io.safetensors, case.json} (the mismatched file: the same config over pipeline_distilled's conv VAE
tensors, for the tests that a set whose config and weights disagree is refused).

The model set is pipeline_distilled_25's (gen_pipeline_25.py: its 2.5 transformer and duration head,
gemma4_tiny's text encoder, pipeline_distilled's audio VAE + vocoder and spatial upsampler), with a
new TINY video VAE file in the layout of a real CausalDiffusionVAE checkpoint:

  config {"vae": {"_class_name": "CausalDiffusionVAE", "encoder": {...}, "decoder": {...},
                  "model_output_type": "x0"}}
  vae.encoder.*                  pipeline_distilled's conv encoder, copied (its flat config's
                                 encoder fields written nested as the Encoder class names them:
                                 "blocks", "out_channels" = the 128 latent channels); the pipeline
                                 runs it only for the upsampler's statistics
  vae.per_channel_statistics.*   pipeline_distilled's (the latent statistics the transformer's tiny
                                 set was made with)
  vae.decoder.*                  a tiny NADiffusionDecoder: gen_diffusion_video_decoder.py's
                                 config (widths 64/32/32/32/16, head dim 16, small kernels, 2 x0
                                 steps, t_emb_dim 32) with in_channels 128; seeded random bf16
                                 weights written as a real file carries them (fused attn.qkv,
                                 t_embedder.mlp.{0,2}, static gate_* per diffusion block), by that
                                 generator's own randomize / to_checkpoint

Then runs ltx_pipelines.distilled.DistilledPipeline over ModelPaths.from_split(...) on the CPU in
float32 (as gen_pipeline_25.py does: the module's bfloat16 read as float32, vae_dtype float32,
Gemma 4's processor stubbed where torchvision is missing) at 64 x 64, 9 frames, seed 12, with
tiling_config=None: the reference's default AUTO_TILING recommends this decoder's tiles from the
free GPU memory and on a CPU finds none (ValueError "Cannot fit a DiffVAE decode tile"; checked
below), so the untiled decode is what a CPU run of the reference does. natten is not installed: the
decoder takes the default chunked_eager pathway's eager SDPA neighbourhood attention.

Recorded as pipeline_distilled_25: every noise draw in draw order, now ending with the decoder's
(in.noise.18, role "decoder": the pipeline generator's next draw after stage 2's, [1, 3, F, H, W] of
the size-floored latent, rounded to float16 before the decoder uses it, stored so), the sigmas,
states, every step, the stage latents, the upsampled latent, the float frames (stored as float16)
and the waveform; not the prompt's contexts nor the audio's per-step states (pipeline_distilled_25
checks the same).

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_pipeline_25_dvae.py [<golden folder>]
Needs what gen_pipeline_25.py needs, and the cases pipeline_distilled_25, pipeline_distilled and
gemma4_tiny in the golden folder.
"""

import copy
import importlib
import importlib.util
import json
import os
import sys
import types

import torch
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_diffusion_video_decoder as gdvd  # noqa: E402
import gen_pipeline_25 as g25  # noqa: E402

import ltx_core.model.video_vae.diffusion_video_decoder as dvd_module  # noqa: E402
import ltx_pipelines.distilled as distilled  # noqa: E402
from ltx_core.model.video_vae import AUTO_TILING  # noqa: E402
from ltx_core.model.video_vae.model_configurator import _build_diffusion_video_decoder  # noqa: E402
from ltx_core.model.video_vae.transformer.attention import natten_available  # noqa: E402
from ltx_core.types import VideoPixelShape  # noqa: E402
from ltx_pipelines.utils.helpers import ensure_tiling_config, tiling_scale_factors_for_vae  # noqa: E402
from ltx_pipelines.utils.model_paths import ModelPaths  # noqa: E402

CASE = "pipeline_distilled_25_dvae"
DECODER_WEIGHT_SEED = 2507
RUN = dict(seed=12, height=64, width=64, num_frames=9, frame_rate=24.0)
# Kept as float16 in io.safetensors (the case's size: the decoder's draw is the whole padded video's
# pixels): the decoder's draw is rounded to float16 before the reference's decoder uses it, so the
# recorded draw is exactly what it decoded from; the frames in [0, 1] lose < 2.5e-4 (tolerance 5e-3).
FLOAT16 = ("in.noise.18", "out.video")
# Not kept (the case's size; pipeline_distilled_25 checks the same machinery): the same prompt's
# contexts through the same text encoder and connectors, and the audio's per-step states (mid.*.audio.*;
# the audio latents after each stage and the waveform are kept).
DROPPED = ("out.text.prompt.video_context", "out.text.prompt.audio_context")
MISMATCHED = "mismatched_video_vae.safetensors"
MODELS = {  # case.json "model_paths", relative to this case's folder
    "transformer": "../pipeline_distilled_25/transformer.safetensors",
    "text_encoder": "../gemma4_tiny/text_encoder.safetensors",
    "video_vae": "video_vae.safetensors",
    "audio_vae": "../pipeline_distilled/checkpoint.safetensors",
    "duration_head": "../pipeline_distilled_25/duration_head.safetensors",
    "spatial_upsampler": "../pipeline_distilled/spatial_upsampler.safetensors",
}


def make_video_vae(golden, path):
    conv_path = os.path.join(golden, "pipeline_distilled", "checkpoint.safetensors")
    tensors = {}
    with safe_open(conv_path, framework="pt") as f:
        flat = json.loads(f.metadata()["config"])["vae"]
        for k in f.keys():
            if k.startswith("vae.encoder.") or k.startswith("vae.per_channel_statistics."):
                tensors[k] = f.get_tensor(k)
    encoder = {"_class_name": "Encoder", "dims": flat["dims"], "in_channels": flat["in_channels"],
               "out_channels": flat["latent_channels"], "blocks": flat["encoder_blocks"],
               "patch_size": flat["patch_size"], "latent_log_var": flat["latent_log_var"],
               "norm_layer": flat["norm_layer"], "spatial_padding_mode": flat["encoder_spatial_padding_mode"]}
    decoder = copy.deepcopy(gdvd.DECODER)
    decoder["in_channels"] = flat["latent_channels"]
    vae = {"_class_name": "CausalDiffusionVAE", "encoder": encoder, "decoder": decoder, "model_output_type": "x0"}
    shell = _build_diffusion_video_decoder(vae)
    sd = gdvd.randomize(shell, DECODER_WEIGHT_SEED)
    ck = gdvd.to_checkpoint(sd, len(shell.diff_blocks), DECODER_WEIGHT_SEED + 100)
    for k, v in ck.items():
        if k.startswith("vae.decoder."):  # the statistics stay the conv set's
            tensors[k] = v
    save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, path,
              metadata={"config": json.dumps({"vae": vae})})
    return vae


def make_mismatched_video_vae(golden, path, vae):
    """The same CausalDiffusionVAE config over the conv decoder's first layer (pipeline_distilled's
    vae.decoder.conv_in.conv.*, cut to 2 output channels to keep the file small) and the latent
    statistics: a set whose config and weights disagree, for the refusal tests (never run)."""
    conv_path = os.path.join(golden, "pipeline_distilled", "checkpoint.safetensors")
    with safe_open(conv_path, framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys() if k.startswith("vae.per_channel_statistics.")}
        for leaf in ("weight", "bias"):
            tensors[f"vae.decoder.conv_in.conv.{leaf}"] = f.get_tensor(f"vae.decoder.conv_in.conv.{leaf}")[:2].clone()
    save_file(tensors, path, metadata={"config": json.dumps({"vae": vae})})


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    assert not natten_available(), "this case records the reference's no-natten (eager SDPA) attention path"
    vae = make_video_vae(golden, os.path.join(out_dir, MODELS["video_vae"]))
    make_mismatched_video_vae(golden, os.path.join(out_dir, MISMATCHED), vae)
    path = {k: os.path.normpath(os.path.join(out_dir, v)) for k, v in MODELS.items()}

    # The reference's default tiling on this machine: none fits a CPU's zero free bytes.
    try:
        ensure_tiling_config(AUTO_TILING, scale_factors=tiling_scale_factors_for_vae(path["video_vae"]),
                             video_shape=VideoPixelShape(batch=1, frames=RUN["num_frames"], height=RUN["height"],
                                                         width=RUN["width"], fps=RUN["frame_rate"]),
                             vae_checkpoint_path=path["video_vae"], device=torch.device("cpu"))
        raise AssertionError("AUTO_TILING found a decode tile on the CPU")
    except ValueError as e:
        auto_tiling_refusal = str(e).split(":")[0]

    rec = g25.Recorder()
    saved = rec.install()

    # The decoder's draw (torch.randn in the decoder module, from the pipeline's generator).
    def decoder_randn(*args, **kwargs):
        assert kwargs.get("generator") is not None, "the decoder drew without the pipeline's generator"
        noise = torch.randn(*args, **kwargs).half().to(kwargs.get("dtype", torch.float32))
        rec.draw(noise, "decoder")
        return noise

    dvd_torch = types.ModuleType("torch_decoder_recording_proxy")
    dvd_torch.__dict__.update(torch.__dict__)
    dvd_torch.randn = decoder_randn
    saved.append((dvd_module, "torch", dvd_module.torch))
    dvd_module.torch = dvd_torch
    try:
        with torch.inference_mode():
            paths = ModelPaths.from_split(transformer_path=path["transformer"], text_encoder_path=path["text_encoder"],
                                          video_vae_path=path["video_vae"], audio_vae_path=path["audio_vae"],
                                          duration_head_path=path["duration_head"])
            pipe = distilled.DistilledPipeline(model_paths=paths, spatial_upsampler_path=path["spatial_upsampler"],
                                               loras=(), device=torch.device("cpu"))
            assert pipe.use_ancestral_sampler
            video, audio, num_frames, tiling = pipe(prompt=g25.PROMPT, seed=RUN["seed"], height=RUN["height"],
                                                    width=RUN["width"], frame_rate=RUN["frame_rate"], images=[],
                                                    num_frames=RUN["num_frames"], vae_dtype=torch.float32,
                                                    tiling_config=None)
            assert tiling is None
            rec.put("out.video", torch.cat(list(video), dim=0))
            rec.put("out.audio", audio.waveform)
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
    assert rec.noise_draws[-1]["role"] == "decoder", rec.noise_draws[-1]
    assert sum(d["role"] == "decoder" for d in rec.noise_draws) == 1
    assert rec.noise_draws[-1]["key"] == FLOAT16[0]
    rec.noise_draws[-1]["note"] = "drawn as float32 from the pipeline's generator, rounded to float16 before use"

    tensors = {k: v.half() if k in FLOAT16 else v for k, v in rec.tensors.items()
               if k not in DROPPED and not (k.startswith("mid.") and ".audio." in k)}
    what = ("end-to-end reference run of ltx_pipelines.distilled.DistilledPipeline on a tiny LTX-2.5 model set "
            "whose video VAE is the diffusion decoder (CausalDiffusionVAE)")
    argv = ["python", "-m", "ltx_pipelines.distilled"]
    for flag, key in (("--transformer-path", "transformer"), ("--text-encoder-path", "text_encoder"),
                      ("--video-vae-path", "video_vae"), ("--audio-vae-path", "audio_vae"),
                      ("--duration-head-path", "duration_head"), ("--spatial-upsampler-path", "spatial_upsampler")):
        argv += [flag, MODELS[key]]
    argv += ["--prompt", g25.PROMPT, "--output-path", "output.mp4", "--seed", str(RUN["seed"]), "--height",
             str(RUN["height"]), "--width", str(RUN["width"]), "--num-frames", str(RUN["num_frames"]),
             "--frame-rate", str(RUN["frame_rate"])]
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_pipeline_25_dvae.py",
        "split": "dev",
        "reference": "Lightricks/LTX-2 at 400fd31 (ltx-core / ltx-pipelines: distilled.py with the Euler-ancestral "
                     "stage 1 from model_version 2.5; DiffusionVideoDecoder, default DiffVAEMode chunked_eager)",
        "how_run": {"device": "cpu", "dtype": "float32: the pipeline module's torch.bfloat16 reads as torch.float32 "
                    "(the ancestral loop's model_dtype too); vae_dtype=float32",
                    "tiling": "tiling_config=None (untiled decode). The reference's default AUTO_TILING refuses on "
                              "a CPU: " + auto_tiling_refusal,
                    "attention": "natten not installed: the decoder's eager SDPA neighbourhood attention",
                    "processor": "Gemma 4's processor stubbed (torchvision missing; prompt enhancement only)"
                    if importlib.util.find_spec("torchvision") is None else "built by the reference",
                    "grad": "torch.inference_mode()",
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "equivalent_cli": {"argv": argv, "run_from": "this case's folder",
                           "note": "the reference's CLI passes AUTO_TILING, which needs a GPU for this decoder"},
        "python_call": "DistilledPipeline(model_paths=ModelPaths.from_split(transformer_path, text_encoder_path, "
                       "video_vae_path, audio_vae_path, duration_head_path), spatial_upsampler_path, loras=(), "
                       f"device=cpu)(prompt, seed={RUN['seed']}, height={RUN['height']}, width={RUN['width']}, "
                       f"frame_rate={RUN['frame_rate']}, images=[], num_frames={RUN['num_frames']}, "
                       "vae_dtype=float32, tiling_config=None)",
        "model_paths": MODELS,
        "mismatched_video_vae": {"file": MISMATCHED, "what": "video_vae.safetensors's CausalDiffusionVAE config over "
                                 "pipeline_distilled's conv VAE tensors (vae.decoder.conv_in.conv.weight, no "
                                 "vae.decoder.conv_in_x_t.weight): a set to be refused, not run"},
        "video_vae": {"config": vae, "decoder_weight_seed": DECODER_WEIGHT_SEED,
                      "encoder_and_statistics": "pipeline_distilled/checkpoint.safetensors's vae.encoder.* and "
                                                "vae.per_channel_statistics.*"},
        "prompt": g25.PROMPT,
        "negative_prompt": None,
        "seed": RUN["seed"],
        "height": RUN["height"],
        "width": RUN["width"],
        "num_frames": RUN["num_frames"],
        "num_frames_returned": num_frames,
        "frame_rate": RUN["frame_rate"],
        "stages": {f"stage{i + 1}": {"sigmas": s, "sampler": "euler_ancestral (eta 1, s_noise 1)" if i == 0 else
                                     "euler"} for i, s in enumerate(rec.stage_sigmas)},
        "noise_draws": rec.noise_draws,
        "tolerance": {"note": "float32 CPU reference; compare stage by stage",
                      "fp32_impl": {"text_context": {"atol": 0.0001, "rtol": 0.001},
                                    "latents": {"atol": 0.002, "rtol": 0.002},
                                    "video": {"atol": 0.005}, "audio": {"atol": 0.005}}},
        "stored_as_float16": {"keys": list(FLOAT16), "why": "size; the decoder's draw was rounded to float16 "
                              "before the reference decoded from it"},
        "not_stored": {"keys": list(DROPPED) + ["mid.*.audio.*"],
                       "why": "size; pipeline_distilled_25 checks the same prompt's contexts and audio steps"},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(tensors.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(tensors, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    v = rec.tensors["out.video"]
    print(f"{CASE}: {len(rec.tensors)} tensors, {len(rec.noise_draws)} noise draws, video {list(v.shape)} "
          f"mean {v.mean().item():.4f} std {v.std().item():.4f}")


if __name__ == "__main__":
    main()
