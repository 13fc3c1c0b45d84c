"""diffusers' ONNX pipelines (OnnxStableDiffusionPipeline and its kin) with onnx2ggml in place of onnxruntime.

    from onnx2ggml.diffusers import load_pipeline
    pipe = load_pipeline("sd15_onnx/")                    # the folder OnnxStableDiffusionPipeline.from_pretrained reads
    pipe("a red fox in the snow", num_inference_steps=20).images[0].save("fox.png")

Each part stays diffusers' OnnxRuntimeModel (the pipeline code is unchanged); only the session inside it is ours.
diffusers and torch are imported here, not by `import onnx2ggml`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .session import InferenceSession, SessionOptions


def _session(path, provider, sess_options) -> InferenceSession:
    return InferenceSession(path, sess_options, providers=[provider] if provider else None)


def load_pipeline(model_dir, provider: str | None = None, sess_options: SessionOptions | None = None,
                  pipeline_class=None, **kwargs):
    """As `<pipeline_class>.from_pretrained(model_dir, provider=..., sess_options=...)` for a local folder: the class
    is the one model_index.json names unless given; every part listed as OnnxRuntimeModel runs on onnx2ggml
    (`provider`: an onnxruntime provider or ggml device name; `sess_options`: onnx2ggml.SessionOptions)."""
    import diffusers
    from diffusers import OnnxRuntimeModel

    with open(os.path.join(model_dir, "model_index.json")) as f:
        index = json.load(f)
    parts = {}
    for name, entry in index.items():
        if name not in kwargs and isinstance(entry, list) and entry[-1:] == ["OnnxRuntimeModel"]:
            part_dir = Path(model_dir, name)
            parts[name] = OnnxRuntimeModel(model=_session(part_dir / "model.onnx", provider, sess_options),
                                           model_save_dir=part_dir)
    cls = pipeline_class or getattr(diffusers, index["_class_name"])
    return cls.from_pretrained(model_dir, **parts, **kwargs)


def use_onnx2ggml(pipe, provider: str | None = None, sess_options: SessionOptions | None = None):
    """Replaces the onnxruntime session of each OnnxRuntimeModel part of a loaded pipeline with an onnx2ggml one
    opened from the same file. Returns the pipeline."""
    from diffusers import OnnxRuntimeModel

    for name, part in pipe.components.items():
        if isinstance(part, OnnxRuntimeModel):
            if part.model_save_dir is None:
                raise ValueError(f"pipeline part '{name}' has no model file to open (model_save_dir is None)")
            part.model = _session(Path(part.model_save_dir, part.latest_model_name), provider, sess_options)
    return pipe
