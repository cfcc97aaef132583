#!/usr/bin/env python3
"""Golden case for --enhance-prompt (text to video): the reference's prompt enhancement with Gemma 3.

Runs the reference's PromptEncoder (ltx_pipelines.utils.blocks) with enhance_first_prompt=True on
tests/data/golden/pipeline_ti2vid's model set, float32 on the CPU: LTXGemmaTextEncoder.enhance_t2v
renders the chat (system + "user prompt: ..."), the processor tokenizes it, model.generate decodes
new tokens with the KV cache, the tokenizer decodes them (special tokens skipped), clean_response
tidies the text, and the enhanced prompt is what gets encoded. Recorded: the rendered chat text, its
token ids, each generated token and its logits, the raw and cleaned text, and the enhanced prompt's
video and audio contexts.

Two things differ from a stock run, both on purpose:
- decoding is greedy (do_sample=False), with max_new_tokens=MAX_NEW_TOKENS: the reference's Gemma 3
  default samples at temperature 0.7 from torch's generator, which no other engine reproduces; ltx2
  decodes greedily, so the same seed gives the same video;
- the system prompt and the chat template are this project's (SYSTEM_PROMPT below; CHAT_TEMPLATE
  renders Gemma 3's chat format: <bos>, the system text and a blank line opening the first user
  turn, <start_of_turn>/<end_of_turn> around each turn, the user text trimmed, then the model's
  turn), because the tiny Gemma folder has no template and the reference's system prompt text is
  not ours to copy. The C++ side is given the same system prompt.

Writes <golden>/enhance_prompt/{case.json, io.safetensors}; the models are pipeline_ti2vid's
(case.json "models_from").

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_enhance_prompt.py [<golden folder>]
Needs torch, transformers (<5.15), tokenizers, safetensors, sentencepiece.
"""

import importlib
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import save_file

import ltx_core.text_encoders.gemma.encoders.base_encoder as base_encoder
import ltx_pipelines.utils.blocks as blocks
import ltx_pipelines.utils.helpers as helpers
from ltx_pipelines.utils.model_paths import ModelPaths

MODELS = "pipeline_ti2vid"
CASE = "enhance_prompt"
MAX_NEW_TOKENS = 40
PROMPT = "A red fox trots across a snowy meadow at dawn."
SYSTEM_PROMPT = ("You turn a short idea for a video into one detailed paragraph: the subject, its motion, "
                 "the setting, the light, the camera and the sounds, in plain present-tense prose.")
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set prefix = messages[0]['content'] + '\n\n' -%}{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set prefix = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\n' }}"
    "{{ prefix if loop.first else '' }}{{ m['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    models = os.path.join(golden, MODELS)
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    recorded, info = {}, {}

    base_encoder.GEMMA3_ENHANCE_GENERATION_KWARGS.clear()
    base_encoder.GEMMA3_ENHANCE_GENERATION_KWARGS.update({"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS})
    base_encoder.default_gemma3_t2v_system_prompt = lambda: SYSTEM_PROMPT

    original_enhance = base_encoder.LTXGemmaTextEncoder._enhance

    def enhance(self, messages, **kwargs):
        info["chat_text"] = self.processor.tokenizer.apply_chat_template(messages, tokenize=False,
                                                                         add_generation_prompt=True)
        original_generate = self.model.generate

        def generate(**inputs):
            out = original_generate(**inputs, return_dict_in_generate=True, output_logits=True)
            recorded["out.enhance.input_ids"] = inputs["input_ids"][0].to(torch.int64)
            recorded["out.enhance.attention_mask"] = inputs["attention_mask"][0].to(torch.int64)
            prompt_length = inputs["input_ids"].shape[1]
            recorded["out.enhance.generated_ids"] = out.sequences[0, prompt_length:].to(torch.int64)
            recorded["mid.enhance.logits"] = torch.cat([l.float() for l in out.logits], dim=0)
            return out.sequences

        self.model.generate = generate
        try:
            text = original_enhance(self, messages, **kwargs)
        finally:
            self.model.generate = original_generate
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
            shutil.copytree(os.path.join(models, "gemma"), gemma)
            with open(os.path.join(gemma, "chat_template.jinja"), "w") as f:
                f.write(CHAT_TEMPLATE)
            paths = ModelPaths.from_monolith(os.path.join(models, "checkpoint.safetensors"), gemma)
            encoder = blocks.PromptEncoder(paths, dtype=torch.float32, device=torch.device("cpu"))
            out = encoder([PROMPT], enhance_first_prompt=True, enhance_prompt_seed=42)[0]
    finally:
        base_encoder.LTXGemmaTextEncoder._enhance = original_enhance
        blocks.generate_enhanced_prompt = original_helper
    recorded["out.text.enhanced.video_context"] = out.video_encoding.float().contiguous()
    recorded["out.text.enhanced.audio_context"] = out.audio_encoding.float().contiguous()

    what = "prompt enhancement (text to video, Gemma 3, greedy): the reference's PromptEncoder with enhance_first_prompt"
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_enhance_prompt.py",
        "split": "dev",
        "models_from": MODELS,
        "reference": "Lightricks/LTX-2 at 400fd31",
        "how_run": {"device": "cpu", "dtype": "float32", "grad": "torch.inference_mode()",
                    "generation": {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS},
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__}},
        "python_call": "PromptEncoder(ModelPaths.from_monolith(checkpoint, gemma + chat_template.jinja), float32, "
                       "cpu)([prompt], enhance_first_prompt=True, enhance_prompt_seed=42) with "
                       "GEMMA3_ENHANCE_GENERATION_KWARGS greedy and the system prompt below",
        "prompt": PROMPT,
        "system_prompt": SYSTEM_PROMPT,
        "chat_template": CHAT_TEMPLATE,
        "chat_text": info["chat_text"],
        "max_new_tokens": MAX_NEW_TOKENS,
        "eos_token_ids": [1, 5],
        "decoded": info["decoded"],
        "enhanced_prompt": info["enhanced_prompt"],
        "tolerance": {"note": "float32 CPU reference; ids and text must match exactly",
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
