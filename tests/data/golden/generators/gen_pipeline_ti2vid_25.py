#!/usr/bin/env python3
"""Golden case for an LTX-2.5 model set through the reference's two-stage text/image-to-video pipeline.

Runs the reference's TI2VidTwoStagesPipeline (ltx_pipelines.ti2vid_two_stages) over
ModelPaths.from_split(...) on the tiny LTX-2.5 split set that gen_pipeline_25.py made (all files
used where they are, named relative to the new case folder; nothing copied):

  ../pipeline_distilled_25/transformer.safetensors     the 2.5 transformer (model_version 2.5.0)
  ../pipeline_distilled_25/duration_head.safetensors   its duration head (not consulted: the
                                                       frame count is given)
  ../gemma4_tiny/text_encoder.safetensors              Gemma 4 + the 2.5 text projection
  ../pipeline_distilled/checkpoint.safetensors         video VAE (encoder and decoder), audio VAE, vocoder
  ../pipeline_distilled/spatial_upsampler.safetensors
  ../pipeline_ti2vid/distilled_lora.safetensors        the tiny distilled LoRA (ComfyUI names
                                                       diffusion_model.<module>.lora_A/B.weight, rank 4);
                                                       its 60 target modules exist in the 2.5 tiny
                                                       transformer with the same shapes (checked here)
  ../pipeline_ti2vid/image.png                         the conditioning image (frame 0, strength 1, crf 0)

and writes pipeline_ti2vid_25/case.json + io.safetensors in the format of pipeline_ti2vid /
pipeline_distilled_25: 64 x 128, 9 frames, 24 fps, 3 stage-1 steps (LTX2Scheduler), seed 12,
the CLI's negative prompt, CFG + STG + modality guidance in stage 1 (FactoryGuidedDenoiser; plain
Euler: the two-stage pipeline has no ancestral loop whatever the model version), the distilled LoRA
in stage 2 (SimpleDenoiser over STAGE_2_DISTILLED_SIGMAS), stage-1 audio decoded.

Recorded: every noise draw in draw order (in.noise.<k>), both prompts' contexts, each stage's sigmas,
initial state, every step's denoised prediction (after guidance) and resulting latent, the stage
latents, the encoded conditioning image per stage, the upsampled latent, the float frames and the
waveform.

How it is run (as gen_pipeline_25.py / gen_pipeline_variants.py run theirs): the pipeline module's
hard-coded torch.bfloat16 reads as torch.float32 (a proxy of torch in that module only),
vae_dtype=float32, CPU; Gemma 4's processor (prompt enhancement only) stubbed where torchvision is
missing.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_pipeline_ti2vid_25.py [<golden folder>]
Needs torch, transformers 5.14 (gemma4_unified), safetensors, einops, sentencepiece, scipy, pillow;
the cases pipeline_distilled_25, gemma4_tiny, pipeline_distilled and pipeline_ti2vid in the golden
folder.
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

import ltx_pipelines.ti2vid_two_stages as ti2vid
import ltx_pipelines.utils.blocks as blocks
import ltx_pipelines.utils.denoisers as denoisers
from ltx_core.components.guiders import MultiModalGuiderParams
from ltx_core.components.noisers import GaussianNoiser
from ltx_core.loader import LTXV_LORA_COMFY_RENAMING_MAP, LoraPathStrengthAndSDOps
from ltx_core.model.video_vae import AUTO_TILING
from ltx_core.text_encoders.gemma.encoders import base_encoder
from ltx_pipelines.utils.args import ImageConditioningInput
from ltx_pipelines.utils.model_paths import ModelPaths

NAME = "pipeline_ti2vid_25"
PROMPT = "A calm forest with mist, the camera pans slowly over a river at golden hour."
SEED, HEIGHT, WIDTH, FRAMES, FPS, STEPS = 12, 64, 128, 9, 24.0, 3
VIDEO_GUIDANCE = dict(cfg_scale=3.0, stg_scale=1.0, rescale_scale=0.7, modality_scale=3.0, skip_step=0,
                      stg_blocks=[1])
AUDIO_GUIDANCE = dict(cfg_scale=7.0, stg_scale=1.0, rescale_scale=0.7, modality_scale=3.0, skip_step=0,
                      stg_blocks=[0])
LORA_STRENGTH = 1.0
IMAGE = {"file": "../pipeline_ti2vid/image.png", "frame_idx": 0, "strength": 1.0, "crf": 0}
MODELS = {  # case.json "model_paths", relative to the case folder
    "transformer": "../pipeline_distilled_25/transformer.safetensors",
    "text_encoder": "../gemma4_tiny/text_encoder.safetensors",
    "video_vae": "../pipeline_distilled/checkpoint.safetensors",
    "audio_vae": "../pipeline_distilled/checkpoint.safetensors",
    "duration_head": "../pipeline_distilled_25/duration_head.safetensors",
    "spatial_upsampler": "../pipeline_distilled/spatial_upsampler.safetensors",
}
LORA_FILE = "../pipeline_ti2vid/distilled_lora.safetensors"


def check_lora_fits(lora_path, transformer_path):
    """Every LoRA pair targets a transformer weight of the product's shape."""
    with safe_open(lora_path, framework="pt") as lora, safe_open(transformer_path, framework="pt") as t:
        weights = set(t.keys())
        targets = []
        for k in sorted(lora.keys()):
            if not k.endswith(".lora_A.weight"):
                continue
            base = "model." + k[: -len(".lora_A.weight")] + ".weight"
            assert base in weights, base
            a = lora.get_slice(k).get_shape()
            b = lora.get_slice(k.replace(".lora_A.", ".lora_B.")).get_shape()
            assert [b[0], a[1]] == list(t.get_slice(base).get_shape()), base
            targets.append(k[len("diffusion_model."): -len(".lora_A.weight")])
    return targets


class Recorder:
    """The tensors of one pipeline call, through wrappers around the reference's blocks."""

    def __init__(self):
        self.tensors = {}
        self.noise_draws = []
        self.stage = 0
        self.stage_sigmas = []

    def put(self, name, t):
        self.tensors[name] = t.detach().to(torch.float32 if t.is_floating_point() else torch.int64).contiguous()

    def install(self):
        rec = self
        saved = []

        def wrap(owner, name, make):
            original = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, make(original))

        def sample_noise(original):
            def f(noiser, state):
                noise = original(noiser, state)
                key = f"in.noise.{len(rec.noise_draws)}"
                modality = "video" if len(rec.noise_draws) % 2 == 0 else "audio"  # each stage draws video first
                rec.noise_draws.append({"key": key, "role": f"stage{rec.stage}.{modality}",
                                        "shape": list(noise.shape),
                                        "dtype_drawn": str(noise.dtype).replace("torch.", "")})
                rec.put(key, noise)
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
                for name, ctx in zip(["prompt", "negative_prompt"], out):
                    rec.put(f"out.text.{name}.video_context", ctx.video_encoding)
                    rec.put(f"out.text.{name}.audio_context", ctx.audio_encoding)
                return out
            return f

        def upsample_call(original):
            def f(upsampler, latent):
                out = original(upsampler, latent)
                rec.put("out.upsampled_video_latent", out)
                return out
            return f

        def conditioner_call(original):
            def f(conditioner, fn):
                items = original(conditioner, fn)
                s = f"stage{rec.stage + 1}"
                for i, item in enumerate(items):
                    rec.put(f"mid.image_conditioning.{s}.item{i}.latent", item.latent)
                return items
            return f

        def denoiser_call(original):
            # Each step's denoised prediction (after guidance) and, at the next step, its latents.
            def f(denoiser, transformer, video_state, audio_state, sigmas, step_index):
                s = f"stage{rec.stage}"
                if step_index > 0:
                    rec.put(f"mid.{s}.step{step_index - 1}.video.latent", video_state.latent)
                    rec.put(f"mid.{s}.step{step_index - 1}.audio.latent", audio_state.latent)
                video, audio = original(denoiser, transformer, video_state, audio_state, sigmas, step_index)
                rec.put(f"mid.{s}.step{step_index}.video.denoised", video.denoised)
                rec.put(f"mid.{s}.step{step_index}.audio.denoised", audio.denoised)
                return video, audio
            return f

        wrap(GaussianNoiser, "_sample_noise", sample_noise)
        wrap(blocks.DiffusionStage, "__call__", stage_call)
        wrap(blocks, "_build_state", build_state)
        wrap(blocks.PromptEncoder, "__call__", prompt_call)
        wrap(blocks.VideoUpsampler, "__call__", upsample_call)
        wrap(blocks.ImageConditioner, "__call__", conditioner_call)
        wrap(denoisers.FactoryGuidedDenoiser, "__call__", denoiser_call)
        wrap(denoisers.SimpleDenoiser, "__call__", denoiser_call)
        # The module's bfloat16 constants read as float32 (a float32 reference run).
        proxy = types.ModuleType("torch_f32_proxy")
        proxy.__dict__.update(torch.__dict__)
        proxy.bfloat16 = torch.float32
        saved.append((ti2vid, "torch", ti2vid.torch))
        ti2vid.torch = proxy
        if importlib.util.find_spec("torchvision") is None:
            saved.append((base_encoder, "build_gemma_processor", base_encoder.build_gemma_processor))
            base_encoder.build_gemma_processor = lambda assets, hf_tokenizer: None
        return saved


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, NAME)
    os.makedirs(out_dir, exist_ok=True)
    path = {k: os.path.normpath(os.path.join(out_dir, v)) for k, v in MODELS.items()}
    lora_path = os.path.normpath(os.path.join(out_dir, LORA_FILE))
    targets = check_lora_fits(lora_path, path["transformer"])
    negative = json.load(open(os.path.join(golden, "pipeline_ti2vid", "case.json")))["negative_prompt"]

    rec = Recorder()
    saved = rec.install()
    try:
        with torch.inference_mode():
            paths = ModelPaths.from_split(transformer_path=path["transformer"], text_encoder_path=path["text_encoder"],
                                          video_vae_path=path["video_vae"], audio_vae_path=path["audio_vae"],
                                          duration_head_path=path["duration_head"])
            pipe = ti2vid.TI2VidTwoStagesPipeline(
                model_paths=paths,
                distilled_lora=[LoraPathStrengthAndSDOps(lora_path, LORA_STRENGTH, LTXV_LORA_COMFY_RENAMING_MAP)],
                spatial_upsampler_path=path["spatial_upsampler"], loras=(), device=torch.device("cpu"))
            images = [ImageConditioningInput(os.path.normpath(os.path.join(out_dir, IMAGE["file"])),
                                             frame_idx=IMAGE["frame_idx"], strength=IMAGE["strength"],
                                             crf=IMAGE["crf"])]
            video, audio, num_frames, _tiling = pipe(
                prompt=PROMPT, negative_prompt=negative, seed=SEED, height=HEIGHT, width=WIDTH, num_frames=FRAMES,
                frame_rate=FPS, num_inference_steps=STEPS,
                video_guider_params=MultiModalGuiderParams(**VIDEO_GUIDANCE),
                audio_guider_params=MultiModalGuiderParams(**AUDIO_GUIDANCE), images=images,
                vae_dtype=torch.float32, tiling_config=AUTO_TILING, max_batch_size=1)
            rec.put("out.video", torch.cat(list(video), dim=0))
            rec.put("out.audio", audio.waveform)
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)

    with safe_open(path["transformer"], framework="pt") as f:
        model_version = f.metadata()["model_version"]
    what = ("end-to-end reference run of ltx_pipelines.ti2vid_two_stages.TI2VidTwoStagesPipeline on a tiny LTX-2.5 "
            "model set (split layout, Gemma 4 text encoder, distilled LoRA, an image at frame 0)")
    argv = ["python", "-m", "ltx_pipelines.ti2vid_two_stages",
            "--transformer-path", MODELS["transformer"], "--text-encoder-path", MODELS["text_encoder"],
            "--video-vae-path", MODELS["video_vae"], "--audio-vae-path", MODELS["audio_vae"],
            "--duration-head-path", MODELS["duration_head"], "--spatial-upsampler-path", MODELS["spatial_upsampler"],
            "--distilled-lora", LORA_FILE, str(LORA_STRENGTH), "--prompt", PROMPT, "--output-path", "output.mp4",
            "--seed", str(SEED), "--height", str(HEIGHT), "--width", str(WIDTH), "--num-frames", str(FRAMES),
            "--frame-rate", str(FPS), "--num-inference-steps", str(STEPS),
            "--video-cfg-guidance-scale", str(VIDEO_GUIDANCE["cfg_scale"]),
            "--video-stg-guidance-scale", str(VIDEO_GUIDANCE["stg_scale"]),
            "--video-rescale-scale", str(VIDEO_GUIDANCE["rescale_scale"]),
            "--a2v-guidance-scale", str(VIDEO_GUIDANCE["modality_scale"]),
            "--video-skip-step", str(VIDEO_GUIDANCE["skip_step"]),
            "--video-stg-blocks", *[str(b) for b in VIDEO_GUIDANCE["stg_blocks"]],
            "--audio-cfg-guidance-scale", str(AUDIO_GUIDANCE["cfg_scale"]),
            "--audio-stg-guidance-scale", str(AUDIO_GUIDANCE["stg_scale"]),
            "--audio-rescale-scale", str(AUDIO_GUIDANCE["rescale_scale"]),
            "--v2a-guidance-scale", str(AUDIO_GUIDANCE["modality_scale"]),
            "--audio-skip-step", str(AUDIO_GUIDANCE["skip_step"]),
            "--audio-stg-blocks", *[str(b) for b in AUDIO_GUIDANCE["stg_blocks"]],
            "--image", IMAGE["file"], str(IMAGE["frame_idx"]), str(IMAGE["strength"]), str(IMAGE["crf"])]
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_pipeline_ti2vid_25.py",
        "split": "dev",
        "reference": "Lightricks/LTX-2 at 400fd31 (ltx-core / ltx-pipelines as in /tmp/ltxref: ti2vid_two_stages.py; "
                     "stage 1 plain Euler with guidance whatever the model version)",
        "how_run": {"device": "cpu",
                    "dtype": "float32: the pipeline module's torch.bfloat16 reads as torch.float32; vae_dtype=float32",
                    "processor": "Gemma 4's processor stubbed (torchvision missing; prompt enhancement only)"
                    if importlib.util.find_spec("torchvision") is None else "built by the reference",
                    "grad": "torch.inference_mode()",
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "equivalent_cli": {"argv": argv, "run_from": "this case folder",
                           "note": "the CLI runs the same code in bfloat16 on the preferred device; this golden is "
                                   "the same call in float32 on the CPU and keeps the float frames / waveform"},
        "python_call": "TI2VidTwoStagesPipeline(model_paths=ModelPaths.from_split(transformer_path, text_encoder_path, "
                       "video_vae_path, audio_vae_path, duration_head_path), distilled_lora=[LoraPathStrengthAndSDOps("
                       f"lora, {LORA_STRENGTH}, LTXV_LORA_COMFY_RENAMING_MAP)], spatial_upsampler_path, loras=(), "
                       f"device=cpu)(prompt, negative_prompt, seed={SEED}, height={HEIGHT}, width={WIDTH}, "
                       f"num_frames={FRAMES}, frame_rate={FPS}, num_inference_steps={STEPS}, video_guider_params, "
                       "audio_guider_params, images=[ImageConditioningInput(image, 0, 1.0, crf=0)], vae_dtype=float32, "
                       "tiling_config=AUTO_TILING, max_batch_size=1)",
        "model_paths": MODELS,
        "transformer_metadata": {"model_version": model_version},
        "prompt": PROMPT,
        "negative_prompt": negative,
        "negative_prompt_is_cli_default": True,
        "seed": SEED,
        "height": HEIGHT,
        "width": WIDTH,
        "num_frames": FRAMES,
        "num_frames_returned": num_frames,
        "frame_rate": FPS,
        "stages": {f"stage{i + 1}": {"sigmas": s, "sampler": "euler",
                                     "denoiser": "FactoryGuidedDenoiser" if i == 0 else "SimpleDenoiser"}
                   for i, s in enumerate(rec.stage_sigmas)},
        "noise_draws": rec.noise_draws,
        "guidance": {"video_guider_params": VIDEO_GUIDANCE, "audio_guider_params": AUDIO_GUIDANCE},
        "lora": {"file": LORA_FILE, "strength": LORA_STRENGTH, "rank": 4, "num_target_modules": len(targets),
                 "stage": "stage 2 only"},
        "image_conditioning": {"images": [IMAGE]},
        "audio_source": "stage 1's audio latent is decoded (stage 2's audio is computed and discarded)",
        "tolerance": {"note": "float32 CPU reference; compare stage by stage",
                      "fp32_impl": {"text_context": {"atol": 0.0001, "rtol": 0.001},
                                    "latents": {"atol": 0.002, "rtol": 0.002},
                                    "video": {"atol": 0.005}, "audio": {"atol": 0.005}}},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(rec.tensors.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(rec.tensors, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(f"{NAME}: {len(rec.tensors)} tensors, {len(rec.noise_draws)} noise draws, frames {num_frames}, "
          f"stages {len(rec.stage_sigmas)}")


if __name__ == "__main__":
    main()
