#!/usr/bin/env python3
"""Golden case for LTX-2.5's DurationHead (ltx_core.duration_head) and the reference's
DurationPredictor (ltx_pipelines.utils.blocks): the shot length predicted from the text connectors'
outputs.

A tiny head (connector widths of the pipeline_ti2vid model set, 16 and 16; pooler width 8, 2 heads,
2 queries, MLP width 8) with torch.manual_seed(SEED) initialisation scaled up so the prediction is
not near 1 s, written as the real checkpoints carry it (keys "duration_head.*", nn.MultiheadAttention's
packed in_proj layout; metadata config with "transformer" widths and a "duration_head" section),
loaded back by the reference's own DurationPredictor.from_checkpoint (float32, CPU) and run on
pipeline_ti2vid's recorded prompt contexts: the seconds from video and audio tokens, from video
alone and from audio alone, and the frame count the predictor gives at 24 and 25 fps.

Writes <golden>/duration_head/{weights.safetensors, io.safetensors, case.json}.

Usage: PYTHONPATH=<LTX-2>/packages/ltx-core/src:<LTX-2>/packages/ltx-pipelines/src \
         python3 gen_duration_head.py [<golden folder>]
"""

import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

from ltx_core.duration_head import DurationHead
from ltx_pipelines.utils.blocks import DurationPredictor

SEED = 7
CONFIG = {"pooler_hidden_dim": 8, "num_queries": 2, "num_pooler_heads": 2, "mlp_hidden": 8}


def main():
    golden = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    out_dir = os.path.join(golden, "duration_head")
    os.makedirs(out_dir, exist_ok=True)
    contexts = load_file(os.path.join(golden, "pipeline_ti2vid", "io.safetensors"))
    video = contexts["out.text.prompt.video_context"].float()
    audio = contexts["out.text.prompt.audio_context"].float()

    torch.manual_seed(SEED)
    head = DurationHead(video_cross_attention_dim=video.shape[-1], audio_cross_attention_dim=audio.shape[-1],
                        pooler_hidden_dim=CONFIG["pooler_hidden_dim"], num_queries=CONFIG["num_queries"],
                        num_pooler_heads=CONFIG["num_pooler_heads"], mlp_hidden=CONFIG["mlp_hidden"])
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(torch.randn_like(p) * (0.5 if "emb" in name or "query" in name else 0.4))
        head.mlp_out.bias.fill_(1.2)  # e ** 1.2 = 3.3 s before the rest: a prediction inside [1, 20] s
    metadata = {"config": json.dumps({"transformer": {"cross_attention_dim": video.shape[-1],
                                                      "audio_cross_attention_dim": audio.shape[-1]},
                                      "duration_head": CONFIG})}
    weights = {f"duration_head.{k}": v.contiguous() for k, v in head.state_dict().items()}
    weights_path = os.path.join(out_dir, "weights.safetensors")
    save_file(weights, weights_path, metadata=metadata)

    predictor = DurationPredictor.from_checkpoint(weights_path, torch.float32, torch.device("cpu"))
    assert predictor is not None
    rec = {}  # the inputs stay in pipeline_ti2vid's io (case.json "inputs_from")
    with torch.inference_mode():
        model = predictor._head
        rec["out.seconds"] = model(video, audio).float()
        rec["out.seconds_video_only"] = model(video, None).float()
        rec["out.seconds_audio_only"] = model(None, audio).float()
        frames = {str(fps): predictor(video, audio, frame_rate=fps) for fps in (24.0, 25.0)}
    what = "DurationHead (LTX-2.5): shot length from the connectors' outputs, and DurationPredictor's frames"
    case = {
        "what": what,
        "generator": "tests/data/golden/generators/gen_duration_head.py",
        "split": "dev",
        "reference": "Lightricks/LTX-2 at 400fd31",
        "how_run": {"device": "cpu", "dtype": "float32", "seed": SEED, "torch": torch.__version__},
        "python_call": "DurationPredictor.from_checkpoint(weights, float32, cpu): _head(video, audio), "
                       "_head(video, None), _head(None, audio); predictor(video, audio, frame_rate=fps)",
        "inputs_from": {"case": "pipeline_ti2vid", "video_tokens": "out.text.prompt.video_context",
                        "audio_tokens": "out.text.prompt.audio_context"},
        "config": CONFIG,
        "frames": frames,
        "min_seconds": 1.0,
        "max_seconds": 20.0,
        "tolerance": {"atol": 1e-5, "rtol": 1e-5},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
                    for k, v in sorted(rec.items())},
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")
    save_file({k: v.contiguous() for k, v in rec.items()}, os.path.join(out_dir, "io.safetensors"),
              metadata={"case": json.dumps({"what": what})})
    print({k: v.tolist() for k, v in rec.items() if k.startswith("out.")}, frames)


if __name__ == "__main__":
    main()
