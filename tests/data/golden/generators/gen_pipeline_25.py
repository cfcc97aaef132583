#!/usr/bin/env python3
"""Golden cases for an LTX-2.5 model set through the reference's distilled pipeline.

Assembles a TINY LTX-2.5 model set in the split ("ComfyUI-aligned") layout the reference's
ModelPaths.from_split reads, with the real key names and metadata:

  transformer.safetensors    a 2.5 transformer (tests/data/golden/transformer_25's config: gated
                             attention, cross-attention AdaLN, bias-free video FFN, keyframe
                             absolute positions; only its latent widths set to the tiny VAEs' 128
                             video and 128 audio channels, caption_channels the tiny Gemma 4's 32)
                             under model.diffusion_model.*, seeded random weights, with the video /
                             audio embeddings connectors of gemma4_tiny/connectors.safetensors
                             (copied: the connectors belong to the transformer file); metadata
                             config {"transformer": ...}, model_version 2.5.0 and
                             gemma_source_checkpoint as gemma4_tiny's
  duration_head.safetensors  a tiny DurationHead (duration_head.*; widths 32 / 16 of the
                             connectors' outputs, pooler 8, 2 heads, 2 queries, MLP 8), seeded
  ../gemma4_tiny/text_encoder.safetensors   the tiny Gemma 4 + LTX-2.5 text projection, packed by
                             the reference's packer (that case's file, used as it is)
  ../pipeline_distilled/checkpoint.safetensors   as --video-vae-path and --audio-vae-path: the
                             conv video VAE (encoder for the upsampler's statistics, decoder), the
                             audio VAE decoder and the vocoder the tiny pipeline cases use (the
                             reference's loaders take each component's prefix from a file holding
                             others; its transformer is not read)
  ../pipeline_distilled/spatial_upsampler.safetensors

Then runs the reference's DistilledPipeline (ltx_pipelines.distilled) over
ModelPaths.from_split(...) on the CPU in float32 and writes two cases in the format of
pipeline_distilled / pipeline_one_stage:

  pipeline_distilled_25        --num-frames 9 at 128 x 192, 24 fps, seed 10
  pipeline_distilled_25_auto   --num-frames unset (AutoDuration(): the duration head predicts the
                               length, clamped to [1 s, 20 s] and snapped to 8k + 1) at 64 x 128,
                               8 fps, seed 11

Recorded per case: every noise draw in draw order (in.noise.<k>: the stage-1 initial noise, the
Euler-ancestral loop's per-step draws, video then audio, from its own generator seeded seed + 10000
(model_version >= 2.5), the stage-2 initial noise), the prompt's contexts, each stage's sigmas, its
initial state, every step's denoised prediction and latent, the stage latents, the upsampled latent,
the float frames and the waveform; the auto case also the head's seconds (out.duration.seconds) and
the frame count (case.json num_frames_returned).

How it is run (as gen_pipeline_variants.py runs the other pipelines): the pipeline module's
hard-coded torch.bfloat16 reads as torch.float32 (a proxy of torch in that module only, which also
makes the ancestral loop's model_dtype float32), vae_dtype=float32, CPU; Gemma 4's processor
(prompt enhancement only) stubbed where torchvision is missing, as gen_gemma4_tiny.py does.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_pipeline_25.py [<golden folder>]
Needs torch, transformers 5.14 (gemma4_unified), safetensors, einops, sentencepiece, scipy; the
cases gemma4_tiny and pipeline_distilled in the golden folder.
"""

import importlib
import importlib.util
import json
import os
import sys
import types

import torch
from safetensors import safe_open
from safetensors.torch import save_file

import ltx_pipelines.distilled as distilled
import ltx_pipelines.utils.blocks as blocks
import ltx_pipelines.utils.samplers as samplers
from ltx_core.components.noisers import GaussianNoiser
from ltx_core.duration_head import DurationHead
from ltx_core.model.transformer.model_configurator import LTXModelConfigurator
from ltx_core.model.video_vae import AUTO_TILING
from ltx_core.text_encoders.gemma.encoders import base_encoder
from ltx_pipelines.utils.model_paths import ModelPaths

SEED_WEIGHTS = 2025
PROMPT = "A calm forest with mist, the camera pans slowly over a river at golden hour."
RUNS = {
    "pipeline_distilled_25": dict(seed=10, height=128, width=192, num_frames=9, frame_rate=24.0),
    "pipeline_distilled_25_auto": dict(seed=11, height=64, width=128, num_frames=None, frame_rate=8.0),
}
HEAD_CONFIG = {"pooler_hidden_dim": 8, "num_queries": 2, "num_pooler_heads": 2, "mlp_hidden": 8}
MODELS = {  # case.json "model_paths", relative to the case folder (the _auto case: to pipeline_distilled_25)
    "transformer": "transformer.safetensors",
    "text_encoder": "../gemma4_tiny/text_encoder.safetensors",
    "video_vae": "../pipeline_distilled/checkpoint.safetensors",
    "audio_vae": "../pipeline_distilled/checkpoint.safetensors",
    "duration_head": "duration_head.safetensors",
    "spatial_upsampler": "../pipeline_distilled/spatial_upsampler.safetensors",
}


def transformer_config(golden):
    with safe_open(os.path.join(golden, "transformer_25", "weights.safetensors"), framework="pt") as f:
        cfg = json.loads(f.metadata()["config"])["transformer"]
    with safe_open(os.path.join(golden, "gemma4_tiny", "connectors.safetensors"), framework="pt") as f:
        connector_cfg = json.loads(f.metadata()["config"])["transformer"]
    cfg = dict(cfg)
    cfg.update(in_channels=128, out_channels=128, audio_in_channels=128, audio_out_channels=128,
               caption_channels=connector_cfg["caption_channels"])
    # The connectors are gemma4_tiny's: their config must be the one they were made with.
    for k, v in connector_cfg.items():
        if k.startswith("connector_") or k.startswith("audio_connector_"):
            assert cfg[k] == v, k
    return cfg


def randomize(module, generator):
    """Seeded weights: matrices N(0, 1/fan_in), norms 1 + N(0, 0.1^2), other vectors N(0, 0.2^2)
    (the scale_shift_tables included: the AdaLN's shifts and scales)."""
    with torch.no_grad():
        for name, p in sorted(module.state_dict(keep_vars=True).items()):
            if not p.is_floating_point():
                continue
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            elif p.dim() >= 2 and "scale_shift_table" not in name:
                p.copy_(torch.randn(p.shape, generator=generator) / p[0].numel() ** 0.5)
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=generator))


def make_models(golden, out_dir):
    generator = torch.Generator().manual_seed(SEED_WEIGHTS)
    cfg = transformer_config(golden)
    with torch.device("meta"):
        model = LTXModelConfigurator.from_metadata({"config": {"transformer": cfg}})
    model = model.to_empty(device="cpu").float()
    randomize(model, generator)
    tensors = {"model.diffusion_model." + k: v.contiguous().clone() for k, v in model.state_dict().items()}
    connectors_path = os.path.join(golden, "gemma4_tiny", "connectors.safetensors")
    with safe_open(connectors_path, framework="pt") as f:
        connector_meta = f.metadata()
        for k in f.keys():
            assert k not in tensors, k
            tensors[k] = f.get_tensor(k)
    metadata = {"config": json.dumps({"transformer": cfg}), "model_version": "2.5.0",
                "gemma_source_checkpoint": connector_meta["gemma_source_checkpoint"]}
    save_file(tensors, os.path.join(out_dir, MODELS["transformer"]), metadata=metadata)

    torch.manual_seed(SEED_WEIGHTS)
    head = DurationHead(video_cross_attention_dim=cfg["cross_attention_dim"],
                        audio_cross_attention_dim=cfg["audio_cross_attention_dim"], **{
                            "pooler_hidden_dim": HEAD_CONFIG["pooler_hidden_dim"],
                            "num_queries": HEAD_CONFIG["num_queries"],
                            "num_pooler_heads": HEAD_CONFIG["num_pooler_heads"],
                            "mlp_hidden": HEAD_CONFIG["mlp_hidden"]})
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * (0.5 if "emb" in name or "query" in name else 0.4))
        head.mlp_out.bias.fill_(0.3)  # about 2.2 s with the rest: 17 frames at 8 fps (no clamp)
    head_meta = {"config": json.dumps({"transformer": {"cross_attention_dim": cfg["cross_attention_dim"],
                                                       "audio_cross_attention_dim": cfg["audio_cross_attention_dim"]},
                                       "duration_head": HEAD_CONFIG})}
    save_file({f"duration_head.{k}": v.contiguous() for k, v in head.state_dict().items()},
              os.path.join(out_dir, MODELS["duration_head"]), metadata=head_meta)
    return cfg, metadata


class Recorder:
    """The tensors of one pipeline call, through wrappers around the reference's blocks."""

    def __init__(self):
        self.tensors = {}
        self.noise_draws = []
        self.stage = 0
        self.stage_sigmas = []
        self.step = {}
        self.duration = None

    def put(self, name, t):
        self.tensors[name] = t.detach().to(torch.float32 if t.is_floating_point() else torch.int64).contiguous()

    def draw(self, noise, role):
        key = f"in.noise.{len(self.noise_draws)}"
        self.noise_draws.append({"key": key, "role": role, "shape": list(noise.shape),
                                 "dtype_drawn": str(noise.dtype).replace("torch.", "")})
        self.put(key, noise)

    def install(self):
        rec = self
        saved = []

        def wrap(owner, name, make):
            original = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, make(original))

        initial = []

        def sample_noise(original):
            def f(noiser, state):
                noise = original(noiser, state)
                rec.draw(noise, f"stage{rec.stage}.{'video' if len(initial) % 2 == 0 else 'audio'}")
                initial.append(1)
                return noise
            return f

        def stage_call(original):
            def f(stage, *args, **kwargs):
                rec.stage += 1
                s = f"stage{rec.stage}"
                sigmas = kwargs["sigmas"]
                rec.put(f"out.sigmas.{s}", sigmas)
                rec.stage_sigmas.append([float(x) for x in sigmas])
                video_state, audio_state = original(stage, *args, **kwargs)
                rec.put(f"out.{s}.video_latent", video_state.latent)
                rec.put(f"out.{s}.audio_latent", audio_state.latent)
                return video_state, audio_state
            return f

        modality_of_state = []

        def build_state(original):
            def f(spec, tools, noiser, dtype, device):
                state = original(spec, tools, noiser, dtype, device)
                mod = "video" if len(modality_of_state) % 2 == 0 else "audio"
                modality_of_state.append(mod)
                prefix = f"mid.stage{rec.stage}.{mod}."
                rec.put(prefix + "initial_latent", state.latent)
                rec.put(prefix + "clean_latent", state.clean_latent)
                rec.put(prefix + "denoise_mask", state.denoise_mask)
                rec.put(prefix + "positions", state.positions)
                return state
            return f

        def prompt_call(original):
            def f(encoder, prompts, **kwargs):
                out = original(encoder, prompts, **kwargs)
                rec.put("out.text.prompt.video_context", out[0].video_encoding)
                rec.put("out.text.prompt.audio_context", out[0].audio_encoding)
                return out
            return f

        def upsample_call(original):
            def f(upsampler, latent):
                out = original(upsampler, latent)
                rec.put("out.upsampled_video_latent", out)
                return out
            return f

        def denoiser_call(original):
            # Each step's denoised predictions (before any blend) and, after the step, its latents.
            def f(denoiser, transformer, video_state, audio_state, sigmas, step_idx):
                s = f"stage{rec.stage}"
                if step_idx > 0:  # the previous step's resulting latents
                    rec.put(f"mid.{s}.step{step_idx - 1}.video.latent", video_state.latent)
                    rec.put(f"mid.{s}.step{step_idx - 1}.audio.latent", audio_state.latent)
                video, audio = original(denoiser, transformer, video_state, audio_state, sigmas, step_idx)
                rec.put(f"mid.{s}.step{step_idx}.video.denoised", getattr(video, "denoised", video))
                rec.put(f"mid.{s}.step{step_idx}.audio.denoised", getattr(audio, "denoised", audio))
                return video, audio
            return f

        def predictor_call(original):
            def f(predictor, video_encoding, audio_encoding, **kwargs):
                seconds = predictor._head(video_encoding, audio_encoding)
                rec.put("out.duration.seconds", seconds)
                frames = original(predictor, video_encoding, audio_encoding, **kwargs)
                rec.duration = {"seconds": float(seconds.item()), "frames": frames, "kwargs": kwargs}
                return frames
            return f

        # The ancestral loop's draws (its own generator, seed + 10000), recorded as they are made
        # through a proxy of torch in the samplers module.
        def loop_randn(*args, **kwargs):
            noise = torch.randn(*args, **kwargs)
            rec.draw(noise, f"stage{rec.stage}.ancestral")
            return noise

        samplers_torch = types.ModuleType("torch_recording_proxy")
        samplers_torch.__dict__.update(torch.__dict__)
        samplers_torch.randn = loop_randn
        saved.append((samplers, "torch", samplers.torch))
        samplers.torch = samplers_torch
        wrap(GaussianNoiser, "_sample_noise", sample_noise)
        wrap(blocks.DiffusionStage, "__call__", stage_call)
        wrap(blocks, "_build_state", build_state)
        wrap(blocks.PromptEncoder, "__call__", prompt_call)
        wrap(blocks.VideoUpsampler, "__call__", upsample_call)
        wrap(blocks.DurationPredictor, "__call__", predictor_call)
        wrap(distilled.SimpleDenoiser, "__call__", denoiser_call)
        # The module's bfloat16 constants read as float32 (a float32 reference run).
        proxy = types.ModuleType("torch_f32_proxy")
        proxy.__dict__.update(torch.__dict__)
        proxy.bfloat16 = torch.float32
        saved.append((distilled, "torch", distilled.torch))
        distilled.torch = proxy
        if importlib.util.find_spec("torchvision") is None:
            saved.append((base_encoder, "build_gemma_processor", base_encoder.build_gemma_processor))
            base_encoder.build_gemma_processor = lambda assets, hf_tokenizer: None
        return saved


def run_case(golden, name, run, transformer_meta):
    out_dir = os.path.join(golden, name)
    models_dir = os.path.join(golden, "pipeline_distilled_25")
    path = {k: os.path.normpath(os.path.join(models_dir, v)) for k, v in MODELS.items()}
    rec = Recorder()
    saved = rec.install()
    try:
        with torch.inference_mode():
            paths = ModelPaths.from_split(transformer_path=path["transformer"], text_encoder_path=path["text_encoder"],
                                          video_vae_path=path["video_vae"], audio_vae_path=path["audio_vae"],
                                          duration_head_path=path["duration_head"])
            pipe = distilled.DistilledPipeline(model_paths=paths, spatial_upsampler_path=path["spatial_upsampler"],
                                               loras=(), device=torch.device("cpu"))
            assert pipe.use_ancestral_sampler
            kwargs = dict(prompt=PROMPT, seed=run["seed"], height=run["height"], width=run["width"],
                          frame_rate=run["frame_rate"], images=[], vae_dtype=torch.float32, tiling_config=AUTO_TILING)
            if run["num_frames"] is not None:
                kwargs["num_frames"] = run["num_frames"]
            video, audio, num_frames, _tiling = pipe(**kwargs)
            rec.put("out.video", torch.cat(list(video), dim=0))
            rec.put("out.audio", audio.waveform)
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
    what = ("end-to-end reference run of ltx_pipelines.distilled.DistilledPipeline on a tiny LTX-2.5 model set "
            "(split layout, Gemma 4 text encoder, duration head)")
    argv = ["python", "-m", "ltx_pipelines.distilled", "--transformer-path", MODELS["transformer"],
            "--text-encoder-path", MODELS["text_encoder"], "--video-vae-path", MODELS["video_vae"],
            "--audio-vae-path", MODELS["audio_vae"], "--duration-head-path", MODELS["duration_head"],
            "--spatial-upsampler-path", MODELS["spatial_upsampler"], "--prompt", PROMPT, "--output-path",
            "output.mp4", "--seed", str(run["seed"]), "--height", str(run["height"]), "--width", str(run["width"]),
            "--frame-rate", str(run["frame_rate"])]
    if run["num_frames"] is not None:
        argv += ["--num-frames", str(run["num_frames"])]
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_pipeline_25.py",
        "split": "dev",
        "reference": "Lightricks/LTX-2 (ltx-core / ltx-pipelines as in /tmp/ltxref: distilled.py with the "
                     "Euler-ancestral stage 1 from model_version 2.5 and AutoDuration)",
        "how_run": {"device": "cpu", "dtype": "float32: the pipeline module's torch.bfloat16 reads as torch.float32 "
                    "(the ancestral loop's model_dtype too); vae_dtype=float32",
                    "processor": "Gemma 4's processor stubbed (torchvision missing; prompt enhancement only)"
                    if importlib.util.find_spec("torchvision") is None else "built by the reference",
                    "grad": "torch.inference_mode()",
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "equivalent_cli": {"argv": argv, "run_from": "the pipeline_distilled_25 folder"},
        "python_call": "DistilledPipeline(model_paths=ModelPaths.from_split(transformer_path, text_encoder_path, "
                       "video_vae_path, audio_vae_path, duration_head_path), spatial_upsampler_path, loras=(), "
                       f"device=cpu)(prompt, seed={run['seed']}, height={run['height']}, width={run['width']}, "
                       f"frame_rate={run['frame_rate']}, images=[], "
                       + (f"num_frames={run['num_frames']}, " if run["num_frames"] is not None
                          else "num_frames left at its default DEFAULT_AUTO_DURATION, ")
                       + "vae_dtype=float32, tiling_config=AUTO_TILING)",
        "model_paths": MODELS,
        "transformer_metadata": {"model_version": transformer_meta["model_version"],
                                 "gemma_source_checkpoint": transformer_meta["gemma_source_checkpoint"]},
        "weights_seed": SEED_WEIGHTS,
        "duration_head": {"config": HEAD_CONFIG},
        "prompt": PROMPT,
        "negative_prompt": None,
        "seed": run["seed"],
        "height": run["height"],
        "width": run["width"],
        "num_frames": run["num_frames"],
        "num_frames_returned": num_frames,
        "frame_rate": run["frame_rate"],
        "stages": {f"stage{i + 1}": {"sigmas": s, "sampler": "euler_ancestral (eta 1, s_noise 1)" if i == 0 else
                                     "euler"} for i, s in enumerate(rec.stage_sigmas)},
        "noise_draws": rec.noise_draws,
        "tolerance": {"note": "float32 CPU reference; compare stage by stage",
                      "fp32_impl": {"text_context": {"atol": 0.0001, "rtol": 0.001},
                                    "latents": {"atol": 0.002, "rtol": 0.002},
                                    "video": {"atol": 0.005}, "audio": {"atol": 0.005}}},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(rec.tensors.items())},
    }
    if rec.duration is not None:
        case["duration_head"].update(predicted_seconds=rec.duration["seconds"], frames=rec.duration["frames"],
                                     min_seconds=rec.duration["kwargs"].get("min_seconds", 1.0),
                                     max_seconds=rec.duration["kwargs"].get("max_seconds", 20.0))
    if name != "pipeline_distilled_25":
        case["models_from"] = "pipeline_distilled_25"
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(rec.tensors, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(f"{name}: {len(rec.tensors)} tensors, {len(rec.noise_draws)} noise draws, frames {num_frames}, "
          f"duration {rec.duration and rec.duration['seconds']}")


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    for name in RUNS:
        os.makedirs(os.path.join(golden, name), exist_ok=True)
    _cfg, meta = make_models(golden, os.path.join(golden, "pipeline_distilled_25"))
    for name, run in RUNS.items():
        run_case(golden, name, run, meta)


if __name__ == "__main__":
    main()
