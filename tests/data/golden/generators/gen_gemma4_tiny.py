#!/usr/bin/env python3
"""Golden case for the Gemma 4 ("gemma4_unified") text encoder of LTX-2.5.

Builds a TINY gemma4_unified model (Hugging Face transformers' Gemma4UnifiedForConditionalGeneration:
the real config's field set and key names, small widths; sliding and full-attention layers, the
full layers with their own head dim, proportional (partial) RoPE and keys-equal-values, the last two
layers sharing the keys and values of earlier ones, double-wide MLPs there; tiny vision and audio
embedders so that their tensors are in the file as in the real one) with seeded random weights, and
a small tokenizer made the way Gemma 4 ships its own: tokenizer.json only (no tokenizer.model), a
SentencePiece BPE trained here on a small corpus, written out by transformers' GemmaTokenizer (BPE
with byte fallback, the Replace(" " -> "▁") normalizer, the no-op Split(" ") pre-tokenizer, a
post-processor that adds no <bos>), Gemma 4's special tokens (<|turn>, <|image|>, ...) and its
tokenizer_config.json / processor_config.json sidecars.

Then, with the reference only (float32 on the CPU, torch.inference_mode):
  1. packs the Hugging Face folder and a random LTX-2.5 text projection into one text-encoder file
     with the reference's packer (build_text_encoder_tensors_from_gemma_root: ComfyUI's flat key
     names, model.layers.* / model.embed_tokens.* / model.norm.*, vision_model.* / audio_projector.*
     / multi_modal_projector.*; tokenizer.json as the uint8 tensor tokenizer_json; the sidecars as
     hf_asset__*; the config as the metadata gemma_config, stamped with a gemma_version);
  2. writes the split layout's transformer file with only what the text path reads of it: random
     video / audio Embeddings1DConnectors under model.diffusion_model.*, the metadata config of an
     LTX-2.5 transformer (tests/data/golden/transformer_25's, caption_channels = the tiny Gemma's
     width), model_version 2.5.0 and gemma_source_checkpoint naming the gemma_version;
  3. runs the reference's PromptEncoder (ltx_pipelines.utils.blocks) over
     ModelPaths.from_split(transformer_path=connectors, text_encoder_path=te) on the prompts below and
     records per prompt the tokens, the features its FeatureExtractorV2 hands to the connectors and
     the video / audio contexts;
  4. with the Gemma the reference built there, runs LTXGemmaTextEncoder.encode's call
     (model.model(input_ids, attention_mask, output_hidden_states=True)) on a short left-padded
     batch and records every hidden state, and the FeatureExtractorV2 features of that batch.

Writes <golden>/gemma4_tiny/{text_encoder.safetensors, connectors.safetensors, io.safetensors,
case.json}.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_gemma4_tiny.py [<golden folder>]
Needs torch, transformers 5.14 (gemma4_unified; < 5.15 as ltx-core pins it), tokenizers, safetensors,
sentencepiece.
"""

import importlib
import importlib.util
import io
import json
import os
import random
import sys
import tempfile

import sentencepiece as spm
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForImageTextToText, Gemma4UnifiedConfig
from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
from transformers.tokenization_utils_base import generate_merges

from ltx_core.text_encoders.gemma.embeddings_connector import (AudioEmbeddings1DConnectorConfigurator,
                                                               Embeddings1DConnectorConfigurator)
from ltx_core.text_encoders.gemma.encoders import base_encoder
from ltx_core.text_encoders.gemma.encoders.base_encoder import LTXGemmaTextEncoder
from ltx_core.text_encoders.gemma.encoders.encoder_configurator import _create_feature_extractor
from ltx_core.text_encoders.gemma.feature_extractor import FeatureExtractorV2
from ltx_core.text_encoders.gemma.gemma_assets import (build_text_encoder_tensors_from_gemma_root,
                                                       save_text_encoder_safetensors)
from ltx_pipelines.utils.blocks import PromptEncoder
from ltx_pipelines.utils.model_paths import ModelPaths

CASE = "gemma4_tiny"
SEED = 20260504
GEMMA_VERSION = "gemma-4-tiny-test"
VOCAB_SIZE = 512
# Gemma 4's special tokens beyond <pad> <eos> <bos> <unk> (ids 0..3 as in the real vocabulary).
SPECIALS = ["<mask>", "<|turn>", "<turn|>", "<|image>", "<image|>", "<|image|>", "<|audio>", "<audio|>",
            "<|audio|>", "<|video|>"]
WORDS = ("a the cat dog fox sea city street night rain neon light calm forest mist river mountain sun walks "
         "runs flies over under with and of in on at slowly quickly camera pans zooms close shot wide golden "
         "hour warm cold blue red green sky cloud wave beach house window door woman man child bird tree "
         "snow wind fire smoke glass car road bridge").split()
PROMPTS = {
    "prompt": "A calm forest with mist, the camera pans slowly over a river at golden hour.",
    # Special tokens written in the text (<bos> first: the reference then adds no second <bos>; an
    # image placeholder, whose embedding the model replaces by <pad>'s), runs of spaces, a tab, a
    # newline, accents, a character outside the vocabulary (byte fallback), outer whitespace.
    "tricky": "  <bos>A  café\tby the  sea,\n<|image|> naïve 🦊 foxes<eos> at <|turn>dawn!  ",
}
SHORT_BATCH = {  # the direct model call: two prompts, left-padded to 16 tokens
    "length": 16,
    "texts": ["a red car on a wet road at night with neon light and rain", "the cat walks <|image|> slowly"],
}


def text_config():
    return {
        "model_type": "gemma4_unified_text",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "global_head_dim": 32,
        "num_global_key_value_heads": 1,
        "attention_k_eq_v": True,
        "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True,
        "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-06,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention",
                        "sliding_attention", "full_attention"],
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                               "rope_theta": 1000000.0},
        },
        "attention_bias": False,
        "attention_dropout": 0.0,
        "final_logit_softcapping": 30.0,
        "use_bidirectional_attention": "vision",
        "tie_word_embeddings": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": 2,
    }


def make_tokenizer(folder):
    """A SentencePiece BPE trained on a seeded corpus, written as Gemma 4 ships its tokenizer."""
    r = random.Random(SEED)
    lines = [" ".join(r.choice(WORDS) for _ in range(r.randint(3, 14))) + r.choice([".", ",", "!", "", " 12", " café"])
             for _ in range(3000)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, model_type="bpe", vocab_size=VOCAB_SIZE, byte_fallback=True,
        add_dummy_prefix=False, remove_extra_whitespaces=False, normalization_rule_name="identity", pad_id=0,
        eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
        control_symbols=SPECIALS, character_coverage=1.0, split_by_whitespace=False, allow_whitespace_only_pieces=True,
        minloglevel=2, num_threads=1)
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.get_piece_size())}
    merges = generate_merges(vocab, scores)
    tok = GemmaTokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    tok.save_pretrained(folder)
    ids = {t: vocab[t] for t in ["<pad>", "<eos>", "<bos>", "<unk>", *SPECIALS]}
    # Gemma 4's tokenizer_config.json fields (google/gemma-4-*-it), add_bos_token not set.
    tokenizer_config = {
        "audio_token": "<|audio|>", "backend": "tokenizers", "boa_token": "<|audio>", "boi_token": "<|image>",
        "bos_token": "<bos>", "eoa_token": "<audio|>", "eoi_token": "<image|>", "eos_token": "<eos>",
        "eot_token": "<turn|>", "extra_special_tokens": ["<|video|>"], "image_token": "<|image|>",
        "mask_token": "<mask>", "model_max_length": 1000000000000000019884624838656, "pad_token": "<pad>",
        "padding_side": "left", "processor_class": "Gemma4UnifiedProcessor", "sot_token": "<|turn>",
        "tokenizer_class": "GemmaTokenizer", "unk_token": "<unk>",
    }
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f, indent=2)
    for name in os.listdir(folder):  # keep tokenizer.json and the sidecars written here
        if name not in ("tokenizer.json", "tokenizer_config.json"):
            os.remove(os.path.join(folder, name))
    return vocab, merges, ids


def make_config(ids):
    return {
        "architectures": ["Gemma4UnifiedForConditionalGeneration"],
        "model_type": "gemma4_unified",
        "gemma_version": GEMMA_VERSION,
        "text_config": text_config(),
        "vision_config": {"model_type": "gemma4_unified_vision", "patch_size": 2, "pooling_kernel_size": 2,
                          "mm_embed_dim": 8, "mm_posemb_size": 4, "output_proj_dims": 8, "rms_norm_eps": 1e-06},
        "audio_config": {"model_type": "gemma4_unified_audio", "audio_embed_dim": 8, "rms_norm_eps": 1e-06},
        "boi_token_id": ids["<|image>"], "eoi_token_id": ids["<image|>"], "image_token_id": ids["<|image|>"],
        "video_token_id": ids["<|video|>"], "boa_token_id": ids["<|audio>"], "eoa_token_index": ids["<audio|>"],
        "audio_token_id": ids["<|audio|>"], "eos_token_id": [ids["<eos>"], ids["<turn|>"]],
        "initializer_range": 0.02, "tie_word_embeddings": True,
    }


def randomize(module, generator, what):
    """Seeded weights with real spread: linears ~ N(0, 1/fan_in), norms 1 + N(0, 0.1^2), the
    embedding table N(0, 0.5^2), layer scalars in [0.5, 1.5]."""
    with torch.no_grad():
        for name, p in sorted(module.state_dict(keep_vars=True).items()):
            if not p.is_floating_point():
                continue
            if name.endswith("layer_scalar"):
                p.copy_(0.5 + torch.rand(p.shape, generator=generator))
            elif "norm" in name or name.endswith("ln1.weight") or name.endswith("ln2.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            elif "embed_tokens" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=generator))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=generator) / p.shape[1] ** 0.5)
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
    what.append(module.__class__.__name__)


def published_key(key):
    """transformers' module path -> the published checkpoint's key: the vision embedder is stored
    as model.vision_embedder.* and its projection as model.embed_vision.embedding_projection.* (the
    names the reference's key ops map back; transformers' own names would be left unloaded)."""
    if key.startswith("model.embed_vision.multimodal_embedder."):
        return "model.embed_vision." + key.removeprefix("model.embed_vision.multimodal_embedder.")
    if key.startswith("model.embed_vision."):
        return "model.vision_embedder." + key.removeprefix("model.embed_vision.")
    return key


def stub_processor(assets, hf_tokenizer):  # noqa: ARG001
    """Stands in for build_gemma_processor where torchvision is missing: the processor (images, chat
    for prompt enhancement) is not on the encode path; module_ops_from_gemma_root builds it anyway."""
    return None


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, CASE)
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    randomized = []

    with tempfile.TemporaryDirectory() as scratch, torch.inference_mode():
        # --- the Hugging Face folder: config.json, model.safetensors, tokenizer, sidecars.
        root = os.path.join(scratch, "gemma-4-tiny")
        os.makedirs(root)
        vocab, merges, ids = make_tokenizer(root)
        config_json = make_config(ids)
        with open(os.path.join(root, "config.json"), "w") as f:
            json.dump(config_json, f, indent=2)
        processor_config = {"processor_class": "Gemma4UnifiedProcessor", "image_seq_length": 4,
                            "audio_seq_length": 4, "audio_ms_per_token": 40}
        # The sub-processors by type name only (the processor serves prompt enhancement, never encoding;
        # building it needs torchvision, which this environment lacks: see stub_processor below).
        for key, type_name in (("feature_extractor", "Gemma4UnifiedAudioFeatureExtractor"),
                               ("image_processor", "Gemma4UnifiedImageProcessor"),
                               ("video_processor", "Gemma4UnifiedVideoProcessor")):
            processor_config[key] = {f"{key}_type": type_name}
        with open(os.path.join(root, "processor_config.json"), "w") as f:
            json.dump(processor_config, f, indent=2)
        config = Gemma4UnifiedConfig.from_dict(config_json)
        model = AutoModelForImageTextToText.from_config(config).float().eval()
        randomize(model, generator, randomized)
        tensors = {published_key(k): v.contiguous() for k, v in model.state_dict().items()
                   if not k.startswith("lm_head.")}
        save_file(tensors, os.path.join(root, "model.safetensors"), metadata={"format": "pt"})
        hf_keys = sorted(tensors)

        # --- the LTX-2.5 text projection (FeatureExtractorV2) and connectors, random.
        with safe_open(os.path.join(golden, "transformer_25", "weights.safetensors"), framework="pt") as f:
            ltx_config = json.loads(f.metadata()["config"])
        tc = text_config()
        ltx_config["transformer"]["caption_channels"] = tc["hidden_size"]
        tcfg = ltx_config["transformer"]
        flat = tc["hidden_size"] * (tc["num_hidden_layers"] + 1)
        video_inner = tcfg["num_attention_heads"] * tcfg["attention_head_dim"]
        audio_inner = tcfg["audio_num_attention_heads"] * tcfg["audio_attention_head_dim"]
        projection = {}
        for name, width in (("video_aggregate_embed", video_inner), ("audio_aggregate_embed", audio_inner)):
            projection[f"text_embedding_projection.{name}.weight"] = torch.randn(width, flat, generator=generator) / flat**0.5
            projection[f"text_embedding_projection.{name}.bias"] = 0.1 * torch.randn(width, generator=generator)
        metadata = {"config": json.dumps(ltx_config), "model_version": "2.5.0",
                    "gemma_source_checkpoint": json.dumps({"gemma_version": GEMMA_VERSION})}
        connectors = {}
        for prefix, configurator in (("model.diffusion_model.video_embeddings_connector.", Embeddings1DConnectorConfigurator),
                                     ("model.diffusion_model.audio_embeddings_connector.", AudioEmbeddings1DConnectorConfigurator)):
            connector = configurator.from_metadata({"config": ltx_config}).float()
            randomize(connector, generator, randomized)
            connectors.update({prefix + k: v.contiguous() for k, v in connector.state_dict().items()})
        connectors_path = os.path.join(out_dir, "connectors.safetensors")
        save_file(connectors, connectors_path, metadata=metadata)

        # --- the packed text-encoder file, by the reference's packer (ComfyUI flat keys).
        te_path = os.path.join(out_dir, "text_encoder.safetensors")
        te_tensors, te_metadata = build_text_encoder_tensors_from_gemma_root(root, projection,
                                                                              gemma_version=GEMMA_VERSION)
        save_text_encoder_safetensors(te_path, te_tensors, te_metadata)

        # --- the reference's prompt encoding from those two files.
        recorded = {}
        captured = {}
        original_encode = LTXGemmaTextEncoder.encode
        original_v2 = FeatureExtractorV2.forward

        def encode(self, texts):
            captured["encoder"] = self
            for name, text in PROMPTS.items():
                if text in texts:
                    pairs = self.tokenizer.tokenize_with_weights(text)["gemma"]
                    recorded[f"out.text.{name}.input_ids"] = torch.tensor([p[0] for p in pairs], dtype=torch.int64)
                    recorded[f"out.text.{name}.attention_mask"] = torch.tensor([p[1] for p in pairs], dtype=torch.int64)
            return original_encode(self, texts)

        def v2_forward(self, hidden_states, attention_mask, padding_side="left"):
            out = original_v2(self, hidden_states, attention_mask, padding_side)
            captured.setdefault("features", []).append((out, attention_mask))
            captured["feature_extractor"] = self
            return out

        LTXGemmaTextEncoder.encode = encode
        FeatureExtractorV2.forward = v2_forward
        original_processor = base_encoder.build_gemma_processor
        if importlib.util.find_spec("torchvision") is None:
            base_encoder.build_gemma_processor = stub_processor
        try:
            paths = ModelPaths.from_split(transformer_path=connectors_path, text_encoder_path=te_path)
            encoder = PromptEncoder(paths, dtype=torch.float32, device=torch.device("cpu"))
            outputs = encoder(list(PROMPTS.values()))
            text_encoder = encoder._text_encoder_builder.build(device=torch.device("cpu"), dtype=torch.float32)
        finally:
            LTXGemmaTextEncoder.encode = original_encode
            FeatureExtractorV2.forward = original_v2
            base_encoder.build_gemma_processor = original_processor
        for name, out, (features, mask) in zip(PROMPTS, outputs, captured["features"]):
            valid = mask[0].bool()
            recorded[f"out.text.{name}.video_features"] = features[0][0][valid].float().contiguous()
            recorded[f"out.text.{name}.audio_features"] = features[1][0][valid].float().contiguous()
            recorded[f"out.text.{name}.video_context"] = out.video_encoding.float().contiguous()
            recorded[f"out.text.{name}.audio_context"] = out.audio_encoding.float().contiguous()

        # --- the direct call on a short left-padded batch, with the Gemma the reference built.
        hf = text_encoder.tokenizer.tokenizer
        T = SHORT_BATCH["length"]
        id_rows, mask_rows = [], []
        for text in SHORT_BATCH["texts"]:
            raw = [ids["<bos>"]] + hf(text, add_special_tokens=False).input_ids
            raw = raw[:T]
            id_rows.append([ids["<pad>"]] * (T - len(raw)) + raw)
            mask_rows.append([0] * (T - len(raw)) + [1] * len(raw))
        input_ids = torch.tensor(id_rows, dtype=torch.int64)
        attention_mask = torch.tensor(mask_rows, dtype=torch.int64)
        result = text_encoder.model.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        states = torch.stack([h.float() for h in result.hidden_states], 0)
        keep = attention_mask[None, :, :, None].float()
        recorded["in.input_ids"] = input_ids
        recorded["in.attention_mask"] = attention_mask
        recorded["out.hidden_states"] = (states * keep).contiguous()
        recorded["mid.hidden_states_raw"] = states.contiguous()
        recorded["out.last_hidden_state"] = result.last_hidden_state.float().contiguous()
        # The processor's feature extractor is freed after use: the same one, built and loaded again.
        fe = _create_feature_extractor(ltx_config["transformer"], config.text_config).float()
        fe.load_state_dict({k.removeprefix("text_embedding_projection."): v for k, v in projection.items()})
        video, audio = fe(tuple(result.hidden_states), attention_mask)
        recorded["out.features.video"] = (video * attention_mask[..., None]).float().contiguous()
        recorded["out.features.audio"] = (audio * attention_mask[..., None]).float().contiguous()
        lm = text_encoder.model.model.language_model
        scaled = lm.embed_tokens(torch.where(input_ids == config.image_token_id, 0, input_ids)).float()
        embed_diff = float((states[0] - scaled).abs().max())
        last_diff = float((states[-1] - result.last_hidden_state).abs().max())

    with safe_open(te_path, framework="pt") as f:
        te_keys = sorted(f.keys())
    what = "tiny Gemma 4 (gemma4_unified) hidden states and LTX-2.5 prompt encoding"
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_gemma4_tiny.py",
        "split": "dev",
        "reference": "Lightricks/LTX-2 (ltx-core 1.2.0: text_encoders/gemma, ltx_pipelines.utils.blocks.PromptEncoder)",
        "how_run": {"device": "cpu", "dtype": "float32", "grad": "torch.inference_mode()",
                    "attn_implementation": text_encoder.model.config._attn_implementation,
                    "versions": {"torch": torch.__version__,
                                 "transformers": importlib.import_module("transformers").__version__,
                                 "tokenizers": importlib.import_module("tokenizers").__version__,
                                 "sentencepiece": spm.__version__}},
        "seed": SEED,
        "weight_init": "seeded (torch.Generator): linears N(0, 1/fan_in), norms 1 + N(0, 0.01), embed_tokens "
                       "N(0, 0.25), layer_scalar U[0.5, 1.5], other vectors N(0, 0.01); projection and "
                       "connectors likewise",
        "randomized_modules": randomized,
        "processor": "build_gemma_processor stubbed (torchvision missing)" if importlib.util.find_spec("torchvision") is None
                     else "built by the reference",
        "config_json": config_json,
        "gemma_version": GEMMA_VERSION,
        "tokenizer": {"vocab_size": len(vocab), "num_merges": len(merges), "special_ids": ids,
                      "ships": "tokenizer.json only (tensor tokenizer_json of the text-encoder file); "
                               "hf_asset__tokenizer_config.json, hf_asset__processor_config.json",
                      "pipeline": "GemmaTokenizer (transformers 5.14): Replace(' ' -> '▁') normalizer, "
                                  "Split(' ', merged_with_previous) pre-tokenizer, BPE with byte fallback, "
                                  "no <bos> from the post-processor (LTXGemmaTokenizer prepends it unless "
                                  "the text starts with one)"},
        "text_encoder_file": {"file": "text_encoder.safetensors", "keys": te_keys, "metadata_keys": sorted(te_metadata),
                              "hf_folder_keys": hf_keys,
                              "packed_by": "build_text_encoder_tensors_from_gemma_root(comfy_flat_lm_keys=True)"},
        "transformer_file": {"file": "connectors.safetensors", "metadata": metadata,
                             "holds": "only the video / audio Embeddings1DConnectors; config = transformer_25's with "
                                      f"caption_channels {tc['hidden_size']}"},
        "python_call": "PromptEncoder(ModelPaths.from_split(transformer_path=connectors.safetensors, "
                       "text_encoder_path=text_encoder.safetensors), float32, cpu)(prompts); short batch: "
                       "text_encoder.model.model(input_ids=in.input_ids, attention_mask=in.attention_mask, "
                       "output_hidden_states=True).hidden_states stacked on dim 0",
        "prompts": PROMPTS,
        "short_batch": SHORT_BATCH,
        "hidden_states[0]_minus_scaled_embeddings_max_abs": embed_diff,
        "hidden_states[-1]_minus_last_hidden_state_max_abs": last_diff,
        "outputs": {
            "out.hidden_states": "[L+1, B, T, D], pad rows zeroed (mid.hidden_states_raw keeps them)",
            "out.features.video / audio": "FeatureExtractorV2 of the short batch, pad rows zeroed",
            "out.text.<p>.input_ids / attention_mask": "LTXGemmaTokenizer output, LEFT padded to 1024",
            "out.text.<p>.video_features / audio_features": "what FeatureExtractorV2 handed to the connectors, "
                                                            "valid rows only",
            "out.text.<p>.video_context / audio_context": "EmbeddingsProcessor output [1, 1024, F]",
        },
        "tolerance": {"atol": 2e-4, "rtol": 1e-4, "note": "float32 CPU reference; tokens must match exactly"},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(recorded.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1, ensure_ascii=False)
        f.write("\n")
    save_file(recorded, os.path.join(out_dir, "io.safetensors"), metadata={"case": json.dumps({"what": what})})
    sizes = {n: os.path.getsize(os.path.join(out_dir, n)) for n in sorted(os.listdir(out_dir))}
    print(f"{CASE}: {len(recorded)} tensors; files {sizes}; embed diff {embed_diff}, last diff {last_diff}")


if __name__ == "__main__":
    main()
