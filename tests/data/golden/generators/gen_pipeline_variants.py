#!/usr/bin/env python3
"""Golden cases for the one-stage and keyframe-interpolation pipelines.

Runs the public reference (Lightricks/LTX-2 at 400fd31) on the CPU in float32 over the tiny model
set of tests/data/golden/pipeline_ti2vid (the same files; the new cases name that folder in
case.json "models_from" instead of copying 7.5 MB each) and writes, per case, case.json and
io.safetensors in the format of ../README.md and pipeline_ti2vid:

  pipeline_one_stage  ltx_pipelines.ti2vid_one_stage.TI2VidOneStagePipeline, an image at frame 0
                      (replaces latent frame 0) and a second at frame 8 (a keyframe, strength 0.5)
  pipeline_keyframes  ltx_pipelines.keyframe_interpolation.KeyframeInterpolationPipeline, both
                      images guiding keyframes at frames 0 and 8, in both stages

Recorded: every noise draw (in.noise.<k>, in draw order), the prompts' contexts, each stage's
sigmas, its state after conditioning and noise (mid.stage<s>.<video|audio>.*), its latents, the
encoded conditioning images, the upsampled latent, the float frames and the waveform.

How it is run (as the pipeline_ti2vid case was): the pipeline module's hard-coded torch.bfloat16
reads as torch.float32 (a proxy of torch in that module only), vae_dtype=float32, CPU, no CUDA.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_pipeline_variants.py [--verify] <golden folder>
--verify re-records pipeline_ti2vid's run with this generator's method and prints how far each tensor
is from that case's (the method's check; it writes nothing).
Needs torch, transformers (<5.15), safetensors, einops, av, pillow, sentencepiece, scipy.
"""

import importlib
import json
import os
import shutil
import sys
import types

import torch
from PIL import Image
from safetensors.torch import save_file

import ltx_pipelines.utils.blocks as blocks
import ltx_pipelines.utils.samplers as samplers
from ltx_core.components.guiders import MultiModalGuiderParams
from ltx_core.components.noisers import GaussianNoiser
from ltx_core.loader import LTXV_LORA_COMFY_RENAMING_MAP, LoraPathStrengthAndSDOps
from ltx_core.model.video_vae import AUTO_TILING
from ltx_pipelines.utils.args import ImageConditioningInput
from ltx_pipelines.utils.model_paths import ModelPaths

MODELS = "pipeline_ti2vid"
SEED = 42
HEIGHT, WIDTH, FRAMES, FPS, STEPS = 128, 192, 9, 24.0, 3
VIDEO_GUIDANCE = dict(cfg_scale=3.0, stg_scale=1.0, rescale_scale=0.7, modality_scale=3.0, skip_step=0,
                      stg_blocks=[1])
AUDIO_GUIDANCE = dict(cfg_scale=7.0, stg_scale=1.0, rescale_scale=0.7, modality_scale=3.0, skip_step=0,
                      stg_blocks=[0])

HQ_VIDEO_GUIDANCE = dict(cfg_scale=3.0, stg_scale=0.0, rescale_scale=0.45, modality_scale=3.0, skip_step=0,
                         stg_blocks=[])
HQ_AUDIO_GUIDANCE = dict(cfg_scale=7.0, stg_scale=0.0, rescale_scale=1.0, modality_scale=3.0, skip_step=0,
                         stg_blocks=[])


class Recorder:
    """Collects the tensors of one pipeline call through wrappers around the reference's blocks."""

    def __init__(self):
        self.tensors = {}
        self.noise_draws = []
        self.stage = 0
        self.stage_sigmas = []

    def put(self, name, t):
        self.tensors[name] = t.detach().to(torch.float32 if t.is_floating_point() else torch.int64).contiguous()

    def install(self, pipeline_module):
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
                rec.noise_draws.append({"key": key, "role": f"stage{rec.stage}.{modality}", "shape": list(noise.shape),
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
                    latent = item.latent if hasattr(item, "latent") else item.keyframes
                    rec.put(f"mid.image_conditioning.{s}.item{i}.latent", latent)
                return items
            return f

        # The res_2s loop's SDE noise: its torch.randn draws (float64, before the loop normalises
        # them) are recorded as they are made, through a proxy of torch in the samplers module.
        def sde_randn(*args, **kwargs):
            noise = torch.randn(*args, **kwargs)
            key = f"in.noise.{len(rec.noise_draws)}"
            rec.noise_draws.append({"key": key, "role": f"stage{rec.stage}.res2s_sde", "shape": list(noise.shape),
                                    "dtype_drawn": str(noise.dtype).replace("torch.", "")})
            rec.put(key, noise)
            return noise

        # The res_2s loop keeps its latents in model_dtype, a bfloat16 default argument: a float32
        # run needs it float32 (else the float32 transformer gets a bfloat16 latent and stops).
        loop = samplers.res2s_audio_video_denoising_loop
        saved.append((loop, "__defaults__", loop.__defaults__))
        loop.__defaults__ = tuple(torch.float32 if d is torch.bfloat16 else d for d in loop.__defaults__)
        samplers_torch = types.ModuleType("torch_recording_proxy")
        samplers_torch.__dict__.update(torch.__dict__)
        samplers_torch.randn = sde_randn
        saved.append((samplers, "torch", samplers.torch))
        samplers.torch = samplers_torch
        wrap(GaussianNoiser, "_sample_noise", sample_noise)
        wrap(blocks.DiffusionStage, "__call__", stage_call)
        wrap(blocks, "_build_state", build_state)
        wrap(blocks.PromptEncoder, "__call__", prompt_call)
        wrap(blocks.VideoUpsampler, "__call__", upsample_call)
        wrap(blocks.ImageConditioner, "__call__", conditioner_call)
        # The module's bfloat16 constants read as float32 (a float32 reference run).
        proxy = types.ModuleType("torch_f32_proxy")
        proxy.__dict__.update(torch.__dict__)
        proxy.bfloat16 = torch.float32
        saved.append((pipeline_module, "torch", pipeline_module.torch))
        pipeline_module.torch = proxy
        return saved


def guider(params):
    return MultiModalGuiderParams(**params)


def run_case(golden, name, module_name, class_name, images, two_stage, what, guidance=None, lora_strengths=None):
    video_guidance, audio_guidance = guidance or (VIDEO_GUIDANCE, AUDIO_GUIDANCE)
    models = os.path.join(golden, MODELS)
    out_dir = os.path.join(golden, name)
    os.makedirs(out_dir, exist_ok=True)
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name)
    source_case = json.load(open(os.path.join(models, "case.json")))
    prompt, negative = source_case["prompt"], source_case["negative_prompt"]
    lora = source_case["lora"]

    rec = Recorder()
    saved = rec.install(module)
    try:
        with torch.inference_mode():
            paths = ModelPaths.from_monolith(os.path.join(models, "checkpoint.safetensors"),
                                             os.path.join(models, "gemma"))
            kwargs = dict(model_paths=paths, loras=(), device=torch.device("cpu"))
            if two_stage:
                kwargs["distilled_lora"] = [LoraPathStrengthAndSDOps(os.path.join(models, lora["file"]), lora["strength"],
                                                                     LTXV_LORA_COMFY_RENAMING_MAP)]
                kwargs["spatial_upsampler_path"] = os.path.join(models, "spatial_upsampler.safetensors")
            if lora_strengths:
                kwargs["distilled_lora_strength_stage_1"], kwargs["distilled_lora_strength_stage_2"] = lora_strengths
            pipe = cls(**kwargs)
            inputs = [ImageConditioningInput(os.path.join(out_dir, im["file"]), frame_idx=im["frame_idx"],
                                             strength=im["strength"], crf=im["crf"]) for im in images]
            result = pipe(prompt=prompt, negative_prompt=negative, seed=SEED, height=HEIGHT, width=WIDTH,
                          num_frames=FRAMES, frame_rate=FPS, num_inference_steps=STEPS,
                          video_guider_params=guider(video_guidance), audio_guider_params=guider(audio_guidance),
                          images=inputs, vae_dtype=torch.float32, tiling_config=AUTO_TILING, max_batch_size=1)
            video, audio = result[0], result[1]  # then the tiling (and, in some pipelines, the frames)
            rec.put("out.video", torch.cat(list(video), dim=0))
            rec.put("out.audio", audio.waveform)
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)

    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_pipeline_variants.py",
        "split": "dev",
        "models_from": MODELS,
        "reference": "Lightricks/LTX-2 at 400fd31",
        "how_run": {"device": "cpu", "dtype": "float32: the pipeline module's torch.bfloat16 reads as torch.float32; "
                    "vae_dtype=float32; the res_2s loop's model_dtype default (bfloat16) is float32 (its float64 "
                    "arithmetic is kept)", "grad": "torch.inference_mode()",
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "python_call": f"{class_name}({', '.join(sorted(k for k in kwargs if k != 'model_paths'))}, model_paths="
                       f"ModelPaths.from_monolith(checkpoint, gemma))(prompt, negative_prompt, seed={SEED}, height={HEIGHT}, "
                       f"width={WIDTH}, num_frames={FRAMES}, frame_rate={FPS}, num_inference_steps={STEPS}, images=..., "
                       "vae_dtype=float32, tiling_config=AUTO_TILING, max_batch_size=1)",
        "prompt": prompt,
        "negative_prompt": negative,
        "seed": SEED,
        "height": HEIGHT,
        "width": WIDTH,
        "num_frames": FRAMES,
        "frame_rate": FPS,
        "stages": {f"stage{i + 1}": {"sigmas": s} for i, s in enumerate(rec.stage_sigmas)},
        "noise_draws": rec.noise_draws,
        "guidance": {"video_guider_params": video_guidance, "audio_guider_params": audio_guidance},
        "image_conditioning": {"images": images},
        "tolerance": source_case["tolerance"],
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(rec.tensors.items())},
    }
    if two_stage:
        case["lora"] = {"file": lora["file"], "strength": lora["strength"]}
    if lora_strengths:
        case["lora"]["strength_stage_1"], case["lora"]["strength_stage_2"] = lora_strengths
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file(rec.tensors, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(f"{name}: {len(rec.tensors)} tensors, {len(rec.noise_draws)} noise draws, stages {len(rec.stage_sigmas)}")


def verify_method(golden):
    """Re-runs pipeline_ti2vid's TI2VidTwoStagesPipeline call with this generator's recording in a
    scratch folder and prints each tensor's largest difference from that case's: the method
    reproduces a fixture made by the original generator (seen 2026-12-03: at most 7.4e-5, the
    tolerances are 2e-3 and more)."""
    import tempfile
    from safetensors.torch import load_file
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(os.path.join(golden, MODELS), os.path.join(scratch, MODELS))
        os.makedirs(os.path.join(scratch, "redo"))
        shutil.copyfile(os.path.join(golden, MODELS, "image.png"), os.path.join(scratch, "redo", "image.png"))
        run_case(scratch, "redo", "ltx_pipelines.ti2vid_two_stages", "TI2VidTwoStagesPipeline",
                 [{"file": "image.png", "frame_idx": 0, "strength": 1.0, "crf": 0}], two_stage=True, what="verify")
        ours = load_file(os.path.join(scratch, "redo", "io.safetensors"))
    theirs = load_file(os.path.join(golden, MODELS, "io.safetensors"))
    worst = 0.0
    for key, value in sorted(ours.items()):
        diff = (value.float() - theirs[key].float()).abs().max().item()
        worst = max(worst, diff)
        print(f"{key:50s} {diff:.3e}")
    print(f"largest difference from {MODELS}: {worst:.3e}")


def main():
    args = [a for a in sys.argv[1:] if a != "--verify"]
    golden = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    if "--verify" in sys.argv:
        verify_method(golden)
        return
    # The conditioning images: pipeline_ti2vid's, and it mirrored left to right (a different picture,
    # same size).
    first_path = os.path.join(golden, MODELS, "image.png")
    first = Image.open(first_path).convert("RGB")
    for name in ["pipeline_one_stage", "pipeline_keyframes", "pipeline_hq"]:
        os.makedirs(os.path.join(golden, name), exist_ok=True)
        shutil.copyfile(first_path, os.path.join(golden, name, "image.png"))
        if name != "pipeline_hq":  # the HQ case conditions on the first image only
            first.transpose(Image.FLIP_LEFT_RIGHT).save(os.path.join(golden, name, "image_last.png"))
    run_case(golden, "pipeline_one_stage", "ltx_pipelines.ti2vid_one_stage", "TI2VidOneStagePipeline",
             [{"file": "image.png", "frame_idx": 0, "strength": 1.0, "crf": 0},
              {"file": "image_last.png", "frame_idx": 8, "strength": 0.5, "crf": 0}],
             two_stage=False,
             what="end-to-end reference run of ltx_pipelines.ti2vid_one_stage.TI2VidOneStagePipeline on the tiny "
                  "model set of pipeline_ti2vid")
    run_case(golden, "pipeline_keyframes", "ltx_pipelines.keyframe_interpolation", "KeyframeInterpolationPipeline",
             [{"file": "image.png", "frame_idx": 0, "strength": 1.0, "crf": 0},
              {"file": "image_last.png", "frame_idx": 8, "strength": 1.0, "crf": 0}],
             two_stage=True,
             what="end-to-end reference run of ltx_pipelines.keyframe_interpolation.KeyframeInterpolationPipeline on "
                  "the tiny model set of pipeline_ti2vid")
    # The HQ pipeline with LTX_2_3_HQ_PARAMS' guidance (no STG) and its default LoRA strengths.
    run_case(golden, "pipeline_hq", "ltx_pipelines.ti2vid_two_stages_hq", "TI2VidTwoStagesHQPipeline",
             [{"file": "image.png", "frame_idx": 0, "strength": 1.0, "crf": 0}],
             two_stage=True,
             what="end-to-end reference run of ltx_pipelines.ti2vid_two_stages_hq.TI2VidTwoStagesHQPipeline (res_2s "
                  "sampler) on the tiny model set of pipeline_ti2vid",
             guidance=(HQ_VIDEO_GUIDANCE, HQ_AUDIO_GUIDANCE), lora_strengths=(0.25, 0.5))


if __name__ == "__main__":
    main()
