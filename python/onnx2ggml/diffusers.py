"""diffusers' ONNX pipelines (OnnxStableDiffusionPipeline and its kin) with onnx2ggml in place of onnxruntime.

    from onnx2ggml.diffusers import load_pipeline
    pipe = load_pipeline("sd15_onnx/")                    # the folder OnnxStableDiffusionPipeline.from_pretrained reads
    pipe("a red fox in the snow", num_inference_steps=20).images[0].save("fox.png")

    load_textual_inversion(pipe, ["badhands.pt", "learned_embeds.bin:<cat-toy>"])   # textual inversion
    pipe(expand_prompt(pipe, "a <cat-toy>, badhands"), ...)

Each part stays diffusers' OnnxRuntimeModel (the pipeline code is unchanged); only the session inside it is ours.
diffusers and torch are imported here, not by `import onnx2ggml`.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

from . import _core
from .session import InferenceSession, SessionOptions, _embedding_list


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


def load_textual_inversion(pipe, embeddings, provider: str | None = None, sess_options: SessionOptions | None = None):
    """Textual-inversion embeddings (onnx2ggml.SessionOptions.embeddings: paths, "FILE:TOKEN" or (path, token)) on an
    ONNX pipeline: its tokenizer gains token, token_1, ... per file, and its text encoder is reopened on onnx2ggml
    with every file loaded so far, the rows appended in the same order (ids from the tokenizer's size on, which must
    be the encoder's vocabulary, as in CLIP's 49408). Files are read by onnx2ggml's reader (no pickle is run).
    Prompts name a multi-vector token once; expand_prompt() writes out its other tokens. Returns the pipeline."""
    from diffusers import OnnxRuntimeModel

    part, tok = pipe.components.get("text_encoder"), getattr(pipe, "tokenizer", None)
    if not isinstance(part, OnnxRuntimeModel) or part.model_save_dir is None or tok is None:
        raise ValueError("load_textual_inversion needs an ONNX text_encoder (with its model folder) and a tokenizer")
    files = _embedding_list(embeddings)
    for path, token in files:
        new = _core.embedding_tokens(path, token, 0, "")
        taken = [t for t in new if t in tok.get_vocab()]
        if taken:
            raise ValueError(f"{path}: token '{taken[0]}' is already in the tokenizer ({len(tok)} tokens)")
        tok.add_tokens(new)
    loaded = getattr(pipe, "_onnx2ggml_embeddings", []) + files
    opts = copy.copy(sess_options) if sess_options is not None else SessionOptions()
    opts.embeddings = loaded
    part.model = _session(Path(part.model_save_dir, part.latest_model_name), provider, opts)
    pipe._onnx2ggml_embeddings = loaded
    return pipe


def expand_prompt(pipe, prompt: str) -> str:
    """A multi-vector token written once stands for all its vectors: "tok" becomes "tok tok_1 tok_2", as diffusers'
    torch pipelines rewrite prompts for textual inversion."""
    added = pipe.tokenizer.added_tokens_encoder
    for t in set(pipe.tokenizer.tokenize(prompt)):
        if t in added and f"{t}_1" in added:
            more, i = [], 1
            while f"{t}_{i}" in added:
                more.append(f"{t}_{i}")
                i += 1
            prompt = prompt.replace(t, " ".join([t] + more))
    return prompt
