#!/usr/bin/env python3
"""Golden case for the single-file text encoder (--text-encoder-path holding Gemma).

Packs tests/data/golden/pipeline_ti2vid's Gemma folder and the checkpoint's
text_embedding_projection into one .safetensors file with the reference's own packer
(ltx_core.text_encoders.gemma.gemma_assets.build_text_encoder_tensors_from_gemma_root and
save_text_encoder_safetensors: Gemma's tensors under their checkpoint keys, the tokenizer.json bytes
as the uint8 tensor `tokenizer_json`, every sidecar JSON as `hf_asset__<name>`, the Hugging Face
config as the metadata `gemma_config`), then runs the reference's prompt encoding from that file as
its split layout does (ltx_pipelines.utils.blocks.PromptEncoder over
ModelPaths.from_split(transformer_path=<the checkpoint without the projection>,
text_encoder_path=<the packed file>)), float32 on the CPU, and records per prompt the tokenizer's
ids and mask and the video and audio contexts.

Writes <golden>/text_encoder_file/{text_encoder.safetensors, io.safetensors, case.json}; the model
files it reads are pipeline_ti2vid's (case.json "models_from").

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_text_encoder_file.py [<golden folder>]
Needs torch, transformers (<5.15), tokenizers, safetensors, sentencepiece.
"""

import importlib
import json
import os
import sys
import tempfile

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ltx_core.text_encoders.gemma.encoders.base_encoder import LTXGemmaTextEncoder
from ltx_core.text_encoders.gemma.gemma_assets import (build_text_encoder_tensors_from_gemma_root,
                                                       save_text_encoder_safetensors)
from ltx_pipelines.utils.blocks import PromptEncoder
from ltx_pipelines.utils.model_paths import ModelPaths

MODELS = "pipeline_ti2vid"
CASE = "text_encoder_file"
PROJECTION_PREFIX = "text_embedding_projection."
# The pipeline's prompt, and one that exercises the tokenizer: special tokens written in the text,
# runs of spaces, tabs and newlines, accents, a character outside the vocabulary (byte fallback),
# leading and trailing whitespace (stripped).
PROMPTS = {
    "prompt": None,  # pipeline_ti2vid's prompt
    "tricky": "  <start_of_turn>A  café\tby the  sea,\n\nnaïve 🦊 foxes<eos> at <bos>dawn<unk>!  ",
}


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    models = os.path.join(golden, MODELS)
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    source_case = json.load(open(os.path.join(models, "case.json")))
    prompts = {k: (v if v is not None else source_case["prompt"]) for k, v in PROMPTS.items()}
    checkpoint = os.path.join(models, "checkpoint.safetensors")

    with safe_open(checkpoint, framework="pt") as f:
        metadata = f.metadata()
        everything = {k: f.get_tensor(k) for k in f.keys()}
    projection = {k: v for k, v in everything.items() if k.startswith(PROJECTION_PREFIX)}
    assert projection, "the checkpoint has no text_embedding_projection"
    te_path = os.path.join(out_dir, "text_encoder.safetensors")
    tensors, te_metadata = build_text_encoder_tensors_from_gemma_root(os.path.join(models, "gemma"), projection)
    save_text_encoder_safetensors(te_path, tensors, te_metadata)

    recorded = {}
    original_encode = LTXGemmaTextEncoder.encode

    def encode(self, texts):
        for name, text in prompts.items():
            if text in texts:
                pairs = self.tokenizer.tokenize_with_weights(text)["gemma"]
                recorded[f"out.text.{name}.input_ids"] = torch.tensor([p[0] for p in pairs], dtype=torch.int64)
                recorded[f"out.text.{name}.attention_mask"] = torch.tensor([p[1] for p in pairs], dtype=torch.int64)
        return original_encode(self, texts)

    LTXGemmaTextEncoder.encode = encode
    try:
        with tempfile.TemporaryDirectory() as scratch, torch.inference_mode():
            # The split layout's transformer file: the checkpoint without what the TE file holds.
            transformer = os.path.join(scratch, "transformer.safetensors")
            save_file({k: v for k, v in everything.items() if k not in projection}, transformer, metadata=metadata)
            paths = ModelPaths.from_split(transformer_path=transformer, text_encoder_path=te_path)
            encoder = PromptEncoder(paths, dtype=torch.float32, device=torch.device("cpu"))
            outputs = encoder(list(prompts.values()))
    finally:
        LTXGemmaTextEncoder.encode = original_encode
    for name, out in zip(prompts, outputs):
        recorded[f"out.text.{name}.video_context"] = out.video_encoding.float().contiguous()
        recorded[f"out.text.{name}.audio_context"] = out.audio_encoding.float().contiguous()

    what = ("single-file text encoder: the reference's packed TE file (Gemma + text_embedding_projection, "
            "tokenizer_json, hf_asset__ sidecars, gemma_config metadata) encoding prompts in its split layout")
    with safe_open(te_path, framework="pt") as f:
        te_keys = sorted(f.keys())
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_text_encoder_file.py",
        "split": "dev",
        "models_from": MODELS,
        "reference": "Lightricks/LTX-2 at 400fd31",
        "how_run": {"device": "cpu", "dtype": "float32", "grad": "torch.inference_mode()",
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "python_call": "save_text_encoder_safetensors(te, *build_text_encoder_tensors_from_gemma_root(gemma, "
                       "{text_embedding_projection.*})); PromptEncoder(ModelPaths.from_split(transformer_path="
                       "checkpoint minus text_embedding_projection, text_encoder_path=te), float32, cpu)(prompts)",
        "text_encoder_file": {"file": "text_encoder.safetensors", "keys": te_keys,
                              "metadata_keys": sorted(te_metadata)},
        "prompts": prompts,
        "tolerance": {"note": "float32 CPU reference; tokens must match exactly",
                      "fp32_impl": source_case["tolerance"]["fp32_impl"]["text_context"]},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(recorded.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1, ensure_ascii=False)
        f.write("\n")
    save_file(recorded, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    print(f"{CASE}: {len(recorded)} tensors, {os.path.getsize(te_path)} bytes of text encoder")


if __name__ == "__main__":
    main()
