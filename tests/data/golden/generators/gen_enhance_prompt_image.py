#!/usr/bin/env python3
"""Golden case for --enhance-prompt with --image: the reference's image-to-video prompt enhancement.

Runs the reference's PromptEncoder (ltx_pipelines.utils.blocks) with enhance_first_prompt=True and
enhance_prompt_image=<image.png>, float32 on the CPU: generate_enhanced_prompt decodes the image,
resizes it to a long side of 896 (resize_aspect_ratio_preserving, torch's uint8 bilinear), and
LTXGemmaTextEncoder.enhance_i2v renders the chat with an image item, Gemma3Processor expands the
image placeholder into its token block and makes pixel_values (PIL bilinear resize, rescale,
normalize), Gemma3ForConditionalGeneration runs the SigLIP vision tower and the multimodal
projector, puts the image features in place of the image tokens' embeddings and decodes with the
KV cache (image tokens attending to one another both ways while the prompt is read), the tokenizer
decodes, clean_response tidies, and the enhanced prompt is encoded.

The Gemma is tests/data/golden/pipeline_ti2vid/gemma's language model and tokenizer (so the
pipeline's checkpoint encodes the result) with a new tiny vision tower under the real key names
(vision_tower.vision_model.*, multi_modal_projector.*): 56 x 56 images, 14 x 14 patches (a 4 x 4
grid), two encoder layers, mm_tokens_per_image 4 (so the projector average-pools 2 x 2 patches).
It is written to <case>/gemma/ with the image <case>/image.png.

Recorded besides the outputs, so each piece is checked on its own: the processor's pixel_values,
the vision tower's last hidden state, the projector's output, the chat's ids / mask /
token_type_ids, every generated id and its logits; and torch's uint8 bilinear interpolate and PIL's
bilinear resize on a few small random images, up and down (mid.resize.*), which the two resizes of
the image are built from.

As in gen_enhance_prompt.py, on purpose: decoding is greedy (do_sample=False, max_new_tokens
MAX_NEW_TOKENS), and the system prompt and the chat template are this project's (CHAT_TEMPLATE
renders Gemma 3's chat format, an image item as <start_of_image>, text items trimmed).

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_enhance_prompt_image.py [<golden folder>]
Needs torch, transformers (<5.15), tokenizers, safetensors, sentencepiece, pillow, numpy, einops, av
(torchaudio is stood in for when missing: see below).
"""

import importlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import PIL
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

try:
    import torchaudio  # noqa: F401
except ImportError:
    # The reference imports torchaudio for its audio VAE encoder's mel spectrogram only, which this
    # case never runs; PyPI has no torchaudio for torch 2.15, so an empty stand-in lets it import.
    import importlib.machinery
    import types
    stand_in = types.ModuleType("torchaudio")
    stand_in.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = stand_in

import ltx_core.text_encoders.gemma.encoders.base_encoder as base_encoder
import ltx_pipelines.utils.blocks as blocks
import ltx_pipelines.utils.helpers as helpers
from ltx_pipelines.utils.model_paths import ModelPaths

MODELS = "pipeline_ti2vid"
CASE = "enhance_prompt_image"
MAX_NEW_TOKENS = 40
PROMPT = "The fox looks up and trots towards the camera."
SYSTEM_PROMPT = ("You are shown the first frame of a video and an idea for it. Write one paragraph: what the "
                 "image shows, what moves next, the camera and the sounds, in plain present-tense prose.")
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set prefix = messages[0]['content'] + '\n\n' -%}{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set prefix = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\n' }}"
    "{{ prefix if loop.first else '' }}"
    "{%- if m['content'] is string -%}{{ m['content'] | trim }}"
    "{%- else -%}{%- for item in m['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")

VISION = {"model_type": "siglip_vision_model", "hidden_size": 16, "image_size": 56, "intermediate_size": 32,
          "num_attention_heads": 2, "num_hidden_layers": 2, "patch_size": 14, "vision_use_head": False,
          "layer_norm_eps": 1e-6, "hidden_act": "gelu_pytorch_tanh"}
MM_TOKENS = 4
# (height, width) -> (height, width) of the resampler checks: up, down, mixed, odd factors.
RESIZES = [((5, 7), (13, 11)), ((23, 17), (6, 9)), ((9, 30), (20, 4)), ((12, 12), (12, 5)), ((3, 4), (40, 41))]


def make_gemma(models, out):
    """The pipeline's tiny Gemma with a new vision tower (bf16, as the pipeline's is stored)."""
    src = os.path.join(models, "gemma")
    os.makedirs(out, exist_ok=True)
    for name in ["tokenizer.json", "tokenizer.model", "tokenizer_config.json"]:
        shutil.copy(os.path.join(src, name), out)
    config = json.load(open(os.path.join(src, "config.json")))
    config["vision_config"] = VISION
    config["mm_tokens_per_image"] = MM_TOKENS
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    pre = json.load(open(os.path.join(src, "preprocessor_config.json")))
    pre["size"] = {"height": VISION["image_size"], "width": VISION["image_size"]}
    pre["image_seq_length"] = MM_TOKENS
    with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=2)
    with open(os.path.join(out, "processor_config.json"), "w") as f:
        json.dump({"image_seq_length": MM_TOKENS, "processor_class": "Gemma3Processor"}, f, indent=2)

    weights = {k: v for k, v in load_file(os.path.join(src, "model.safetensors")).items()
               if k.startswith("language_model.")}
    g = torch.Generator().manual_seed(1234)

    def uniform(shape, scale):
        return ((torch.rand(shape, generator=g) * 2 - 1) * scale).to(torch.bfloat16)

    D, I, p = VISION["hidden_size"], VISION["intermediate_size"], VISION["patch_size"]
    n = (VISION["image_size"] // p) ** 2
    v = "vision_tower.vision_model."
    weights[v + "embeddings.patch_embedding.weight"] = uniform((D, 3, p, p), (3 / (3 * p * p)) ** 0.5)
    weights[v + "embeddings.patch_embedding.bias"] = uniform((D,), 0.1)
    weights[v + "embeddings.position_embedding.weight"] = uniform((n, D), 0.5)
    for i in range(VISION["num_hidden_layers"]):
        l = f"{v}encoder.layers.{i}."
        for norm in ["layer_norm1", "layer_norm2"]:
            weights[l + norm + ".weight"] = (1 + uniform((D,), 0.1).float()).to(torch.bfloat16)
            weights[l + norm + ".bias"] = uniform((D,), 0.1)
        for proj in ["q_proj", "k_proj", "v_proj", "out_proj"]:
            weights[l + "self_attn." + proj + ".weight"] = uniform((D, D), (3 / D) ** 0.5)
            weights[l + "self_attn." + proj + ".bias"] = uniform((D,), 0.1)
        weights[l + "mlp.fc1.weight"] = uniform((I, D), (3 / D) ** 0.5)
        weights[l + "mlp.fc1.bias"] = uniform((I,), 0.1)
        weights[l + "mlp.fc2.weight"] = uniform((D, I), (3 / I) ** 0.5)
        weights[l + "mlp.fc2.bias"] = uniform((D,), 0.1)
    weights[v + "post_layernorm.weight"] = (1 + uniform((D,), 0.1).float()).to(torch.bfloat16)
    weights[v + "post_layernorm.bias"] = uniform((D,), 0.1)
    weights["multi_modal_projector.mm_soft_emb_norm.weight"] = uniform((D,), 0.1)
    weights["multi_modal_projector.mm_input_projection_weight"] = uniform((D, config["text_config"]["hidden_size"]),
                                                                          (3 / D) ** 0.5)
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})


def make_image(path):
    """A 40 x 30 picture with edges, gradients and noise, so the resizes' rounding shows."""
    g = np.random.default_rng(7)
    y, x = np.mgrid[0:30, 0:40]
    rgb = np.stack([x * 6, y * 8, (x * y) % 256], axis=-1).astype(np.float64)
    rgb[8:20, 10:26] = [230, 90, 20]
    rgb += g.integers(-25, 26, size=rgb.shape)
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB").save(path)


def resample_cases(recorded):
    g = torch.Generator().manual_seed(99)
    for i, ((h, w), (oh, ow)) in enumerate(RESIZES):
        img = torch.randint(0, 256, (h, w, 3), generator=g, dtype=torch.uint8)
        # As resize_and_center_crop calls it: the uint8 image as [1, C, H, W] (a channels-last view).
        t = torch.nn.functional.interpolate(img.permute(2, 0, 1)[None], size=(oh, ow), mode="bilinear",
                                            align_corners=False)[0].permute(1, 2, 0)
        p = np.array(Image.fromarray(img.numpy(), "RGB").resize((ow, oh), Image.BILINEAR))
        recorded[f"mid.resize.{i}.in"] = img.contiguous()
        recorded[f"mid.resize.{i}.torch"] = t.contiguous()
        recorded[f"mid.resize.{i}.pil"] = torch.from_numpy(p).contiguous()


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    models = os.path.join(golden, MODELS)
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    make_gemma(models, os.path.join(out_dir, "gemma"))
    image_path = os.path.join(out_dir, "image.png")
    make_image(image_path)
    recorded, info = {}, {}
    resample_cases(recorded)

    base_encoder.GEMMA3_ENHANCE_GENERATION_KWARGS.clear()
    base_encoder.GEMMA3_ENHANCE_GENERATION_KWARGS.update({"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS})
    base_encoder.default_gemma3_i2v_system_prompt = lambda: SYSTEM_PROMPT

    original_enhance = base_encoder.LTXGemmaTextEncoder._enhance

    def enhance(self, messages, image=None, **kwargs):
        info["chat_text"] = self.processor.tokenizer.apply_chat_template(messages, tokenize=False,
                                                                         add_generation_prompt=True)
        recorded["mid.enhance.image_long_side"] = image.contiguous()  # the uint8 image given to the processor
        model = self.model
        original_generate = model.generate
        original_image_features = model.model.get_image_features

        def get_image_features(pixel_values, **kw):
            recorded["mid.vision.pixel_values"] = pixel_values.float().contiguous()
            out = original_image_features(pixel_values, **kw)
            vision = model.model.vision_tower(pixel_values=pixel_values).last_hidden_state
            recorded["mid.vision.last_hidden_state"] = vision.float().contiguous()
            features = out.pooler_output if hasattr(out, "pooler_output") else out
            recorded["mid.vision.image_features"] = features.float().contiguous()
            return out

        def generate(**inputs):
            out = original_generate(**inputs, return_dict_in_generate=True, output_logits=True)
            recorded["out.enhance.input_ids"] = inputs["input_ids"][0].to(torch.int64)
            recorded["out.enhance.attention_mask"] = inputs["attention_mask"][0].to(torch.int64)
            recorded["out.enhance.token_type_ids"] = inputs["token_type_ids"][0].to(torch.int64)
            prompt_length = inputs["input_ids"].shape[1]
            recorded["out.enhance.generated_ids"] = out.sequences[0, prompt_length:].to(torch.int64)
            recorded["mid.enhance.logits"] = torch.cat([l.float() for l in out.logits], dim=0)
            return out.sequences

        model.generate = generate
        model.model.get_image_features = get_image_features
        try:
            text = original_enhance(self, messages, image=image, **kwargs)
        finally:
            model.generate = original_generate
            model.model.get_image_features = original_image_features
        info["decoded"] = text
        return text

    original_helper = blocks.generate_enhanced_prompt

    def generate_enhanced_prompt(*args, **kwargs):
        info["enhanced_prompt"] = original_helper(*args, **kwargs)
        return info["enhanced_prompt"]

    base_encoder.LTXGemmaTextEncoder._enhance = enhance
    blocks.generate_enhanced_prompt = generate_enhanced_prompt
    try:
        with tempfile.TemporaryDirectory() as scratch, torch.inference_mode():
            gemma = os.path.join(scratch, "gemma")
            shutil.copytree(os.path.join(out_dir, "gemma"), gemma)
            with open(os.path.join(gemma, "chat_template.jinja"), "w") as f:
                f.write(CHAT_TEMPLATE)
            paths = ModelPaths.from_monolith(os.path.join(models, "checkpoint.safetensors"), gemma)
            encoder = blocks.PromptEncoder(paths, dtype=torch.float32, device=torch.device("cpu"))
            out = encoder([PROMPT], enhance_first_prompt=True, enhance_prompt_image=image_path,
                          enhance_prompt_seed=42)[0]
    finally:
        base_encoder.LTXGemmaTextEncoder._enhance = original_enhance
        blocks.generate_enhanced_prompt = original_helper
    recorded["out.text.enhanced.video_context"] = out.video_encoding.float().contiguous()
    recorded["out.text.enhanced.audio_context"] = out.audio_encoding.float().contiguous()
    long_side = recorded.pop("mid.enhance.image_long_side")

    what = ("prompt enhancement with an image (image to video, Gemma 3 with its vision tower, greedy): the "
            "reference's PromptEncoder with enhance_first_prompt and enhance_prompt_image")
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_enhance_prompt_image.py",
        "split": "dev",
        "models_from": MODELS,
        "gemma": "gemma",
        "image": "image.png",
        "reference": "Lightricks/LTX-2 at 400fd31",
        "how_run": {"device": "cpu", "dtype": "float32", "grad": "torch.inference_mode()",
                    "generation": {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS},
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__,
                                 "pillow": PIL.__version__}},
        "python_call": "PromptEncoder(ModelPaths.from_monolith(checkpoint, gemma + chat_template.jinja), float32, "
                       "cpu)([prompt], enhance_first_prompt=True, enhance_prompt_image=image.png, "
                       "enhance_prompt_seed=42) with GEMMA3_ENHANCE_GENERATION_KWARGS greedy and the system "
                       "prompt below",
        "prompt": PROMPT,
        "system_prompt": SYSTEM_PROMPT,
        "chat_template": CHAT_TEMPLATE,
        "chat_text": info["chat_text"],
        "image_long_side_shape": list(long_side.shape),
        "resizes": [{"in": list(a), "out": list(b)} for a, b in RESIZES],
        "max_new_tokens": MAX_NEW_TOKENS,
        "decoded": info["decoded"],
        "enhanced_prompt": info["enhanced_prompt"],
        "tolerance": {"note": "float32 CPU reference; ids, pixels of the resizes and text must match exactly",
                      "pixel_values": {"atol": 1e-6, "rtol": 0},
                      "vision": {"atol": 1e-4, "rtol": 1e-4},
                      "logits": {"atol": 1e-3, "rtol": 1e-3},
                      "text_context": json.load(open(os.path.join(models, "case.json")))["tolerance"]["fp32_impl"][
                          "text_context"]},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(recorded.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1, ensure_ascii=False)
        f.write("\n")
    save_file(recorded, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(json.dumps({k: case[k] for k in ["chat_text", "decoded", "enhanced_prompt"]}, ensure_ascii=False, indent=1))
    print({k: list(v.shape) for k, v in recorded.items()})
    print(recorded["out.enhance.input_ids"].tolist(), recorded["out.enhance.generated_ids"].tolist())


if __name__ == "__main__":
    main()
