#!/usr/bin/env python3
"""Export the model-test fixtures in tests/models/ (developer-only: needs torch).

    scripts/setup.sh --with-torch
    .venv/bin/python scripts/export_models.py [--only REGEX] [--out-dir tests/models]

Writes tests/models/<name>.onnx and tests/models/manifest.json. CI never runs this; it
uses the committed graphs. Two kinds of fixtures:

* torchvision models (resnet18, mobilenet_v2, squeezenet1_1): exported with the
  TorchScript exporter (dynamo=False), dynamic batch. All float initializers are moved
  to external data ("<name>.onnx.data") and only the graph is committed; the data file
  is regenerated from seeds by tests/model_data.py at test time.
* tiny hand-written models (small_cnn, transformer_block, vae_decoder_like,
  vae_decoder_custom, clip_text_like): weights from a fixed torch seed, embedded in the .onnx.

Everything is deterministic for a fixed torch/onnx version.
"""
import argparse
import io
import json
import math
import os
import re
import sys
import warnings

import numpy as np
import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import model_data  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DEFAULT_TOL = 1e-4


# ----------------------------------------------------------------------------- tiny models

class SmallCNN(nn.Module):
    """conv/bn/relu/pool/linear; flatten via view(x.size(0), -1) (dynamic Shape chain)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 32, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)      # 32 -> 16
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)      # 16 -> 8
        x = F.relu(self.conv3(x))                                  # 8 -> 4
        x = x.view(x.size(0), -1)
        return self.fc2(F.relu(self.fc1(x)))


class TransformerBlock(nn.Module):
    """Pre-LN block: multi-head self-attention (explicit MatMul/Softmax) + GELU MLP."""

    def __init__(self, dim=64, heads=4, hidden=256):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = torch.softmax(att, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ResnetBlock(nn.Module):
    def __init__(self, ch, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, ch, eps=1e-6)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, ch, eps=1e-6)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


class SpatialAttention(nn.Module):
    """Single-head self-attention over H*W tokens (diffusers' VAE mid-block style)."""

    def __init__(self, ch, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, ch, eps=1e-6)
        self.to_q = nn.Linear(ch, ch)
        self.to_k = nn.Linear(ch, ch)
        self.to_v = nn.Linear(ch, ch)
        self.to_out = nn.Linear(ch, ch)

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).view(b, c, h * w).transpose(1, 2)       # [b, hw, c]
        q, k, v = self.to_q(t), self.to_k(t), self.to_v(t)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(c), dim=-1)
        o = self.to_out(torch.bmm(att, v))
        return x + o.transpose(1, 2).reshape(b, c, h, w)


class VaeDecoderLike(nn.Module):
    def __init__(self, latent=4, ch=32, groups=8, out_ch=3):
        super().__init__()
        self.conv_in = nn.Conv2d(latent, ch, 3, padding=1)
        self.res1 = ResnetBlock(ch, groups)
        self.attn = SpatialAttention(ch, groups)
        self.res2 = ResnetBlock(ch, groups)
        self.up_conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.norm_out = nn.GroupNorm(groups, ch, eps=1e-6)
        self.conv_out = nn.Conv2d(ch, out_ch, 3, padding=1)

    def forward(self, z):
        h = self.conv_in(z)
        h = self.res2(self.attn(self.res1(h)))
        h = self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))


class OwnGroupNorm(nn.Module):
    """A model's own GroupNorm (not nn.GroupNorm): both reshape targets come from x.shape, so the export builds
    them through Shape/Gather/Unsqueeze/Concat rather than a constant and Shape(x)."""

    def __init__(self, groups, ch, eps=1e-6, affine=True):
        super().__init__()
        self.groups, self.eps = groups, eps
        self.weight = nn.Parameter(torch.rand(ch) * 0.8 + 0.6) if affine else None
        self.bias = nn.Parameter(torch.rand(ch) * 0.4 - 0.2) if affine else None
        self.register_buffer("ones", torch.ones(groups))  # the export needs the per-group count spelled out
        self.register_buffer("zeros", torch.zeros(groups))

    def forward(self, x):
        b, c, h, w = x.shape
        y = F.instance_norm(x.reshape(b, self.groups, -1), weight=self.ones, bias=self.zeros, eps=self.eps)
        y = y.reshape(b, c, h, w)
        if self.weight is None:
            return y
        return y * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


class OwnAttention(nn.Module):
    """Multi-head self-attention over H*W tokens written out by hand. heads4: [B, H, T, D] heads, scores divided by
    sqrt(d), K transposed twice; otherwise [B*H, T, D] heads (bmm), Q and K each multiplied by d**-0.25."""

    def __init__(self, ch, groups, heads, heads4):
        super().__init__()
        self.norm = OwnGroupNorm(groups, ch)
        self.qkv = nn.ModuleList(nn.Linear(ch, ch) for _ in range(3))
        self.proj = nn.Linear(ch, ch)
        self.heads, self.heads4 = heads, heads4

    def forward(self, x):
        b, c, h, w = x.shape
        n, H, d = h * w, self.heads, c // self.heads
        t = self.norm(x).reshape(b, c, n).transpose(1, 2)
        q, k, v = (lin(t).reshape(b, n, H, d) for lin in self.qkv)  # [b, n, H, d]
        if self.heads4:
            kt = k.transpose(1, 2).transpose(2, 3)  # [b, H, d, n]
            att = torch.softmax(q.transpose(1, 2) @ kt / math.sqrt(d), dim=-1)
            o = (att @ v.transpose(1, 2)).transpose(1, 2).reshape(b, n, c)
        else:
            s = d ** -0.25
            q, k, v = (z.transpose(1, 2).reshape(b * H, n, d) for z in (q, k, v))
            att = torch.softmax(torch.bmm(q * s, (k * s).transpose(1, 2)), dim=-1)
            o = torch.bmm(att, v).reshape(b, H, n, d).transpose(1, 2).reshape(b, n, c)
        return x + self.proj(o).transpose(1, 2).reshape(b, c, h, w)


class OwnResnetBlock(nn.Module):
    def __init__(self, ch, groups, affine2=True):
        super().__init__()
        self.norm1 = OwnGroupNorm(groups, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.norm2 = OwnGroupNorm(groups, ch, affine=affine2)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        return x + self.conv2(F.silu(self.norm2(h)))


class VaeDecoderCustom(nn.Module):
    """An SD-style VAE decoder from another model definition: its own GroupNorm and attention modules (issue 26:
    every GroupNorm and attention must fuse whatever nodes the export spells them with)."""

    def __init__(self, latent=4, ch=32, groups=8, out_ch=3):
        super().__init__()
        self.conv_in = nn.Conv2d(latent, ch, 3, padding=1)
        self.res1 = OwnResnetBlock(ch, groups)
        self.attn1 = OwnAttention(ch, groups, heads=2, heads4=True)
        self.attn2 = OwnAttention(ch, groups, heads=2, heads4=False)
        self.res2 = OwnResnetBlock(ch, groups, affine2=False)
        self.up_conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.norm_out = OwnGroupNorm(groups, ch)
        self.conv_out = nn.Conv2d(ch, out_ch, 3, padding=1)

    def forward(self, z):
        h = self.res2(self.attn2(self.attn1(self.res1(self.conv_in(z)))))
        h = self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


class ClipLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x, causal):
        b, s, d = x.shape
        hd = d // self.heads
        h = self.ln1(x)
        q = self.q(h).view(b, s, self.heads, hd).transpose(1, 2) * (hd ** -0.5)
        k = self.k(h).view(b, s, self.heads, hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.heads, hd).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-1, -2)).masked_fill(causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(o)
        return x + self.fc2(quick_gelu(self.fc1(self.ln2(x))))


class ClipTextLike(nn.Module):
    def __init__(self, vocab=1000, max_pos=77, dim=32, heads=2, hidden=128, layers=2):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.position_embedding = nn.Embedding(max_pos, dim)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        self.layers = nn.ModuleList([ClipLayer(dim, heads, hidden) for _ in range(layers)])
        self.final_ln = nn.LayerNorm(dim)

    def forward(self, input_ids):
        b, s = input_ids.shape
        pos = self.position_ids[:, :s]
        x = self.token_embedding(input_ids) + self.position_embedding(pos)
        # causal mask depends on the (dynamic) sequence length: Trilu + Cast + Expand
        causal = torch.ones(s, s, device=input_ids.device).triu(1).bool()
        causal = causal[None, None].expand(b, 1, s, s)
        for layer in self.layers:
            x = layer(x, causal)
        x = self.final_ln(x)
        # pooled output at the EOS token (highest id), like CLIP's text projection input
        pooled = x[torch.arange(b), input_ids.argmax(dim=-1)]
        return x, pooled


def _randomize_norm_stats(model: nn.Module, seed: int):
    """Make BN/LN/GN parameters non-trivial so nothing is deduplicated or no-op."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.8 + 0.6)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.4 - 0.2)
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=g) * 0.4 - 0.2)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
            elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.8 + 0.6)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.4 - 0.2)


# ----------------------------------------------------------------------------- specs

def torchvision_model(name):
    def build():
        import torchvision
        return getattr(torchvision.models, name)(weights=None)
    return build


IMG = {"name": "input", "dtype": "float32", "distribution": "normal"}
SPECS = [
    dict(name="resnet18", build=torchvision_model("resnet18"), opset=13, external=True,
         training="eval", inputs=[IMG], outputs=["logits"],
         example={"input": [1, 3, 224, 224]},
         dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
         cases=[{"input": [1, 3, 224, 224]}, {"input": [2, 3, 224, 224]}]),
    dict(name="mobilenet_v2", build=torchvision_model("mobilenet_v2"), opset=12, external=True,
         training="preserve", inputs=[IMG], outputs=["logits"],  # keeps BatchNormalization nodes
         example={"input": [1, 3, 224, 224]},
         dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
         cases=[{"input": [1, 3, 224, 224]}, {"input": [2, 3, 224, 224]}]),
    dict(name="squeezenet1_1", build=torchvision_model("squeezenet1_1"), opset=12, external=True,
         training="eval", inputs=[IMG], outputs=["logits"],
         example={"input": [1, 3, 224, 224]},
         dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
         cases=[{"input": [1, 3, 224, 224]}, {"input": [2, 3, 224, 224]}]),
    dict(name="small_cnn", build=SmallCNN, opset=13, external=False, training="preserve",
         inputs=[IMG], outputs=["logits"], example={"input": [1, 3, 32, 32]},
         dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
         cases=[{"input": [1, 3, 32, 32]}, {"input": [3, 3, 32, 32]}]),
    dict(name="transformer_block", build=TransformerBlock, opset=13, external=False, training="eval",
         inputs=[{"name": "x", "dtype": "float32", "distribution": "normal"}], outputs=["y"],
         example={"x": [1, 10, 64]},
         dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
         cases=[{"x": [1, 10, 64]}, {"x": [2, 16, 64]}]),
    dict(name="vae_decoder_like", build=VaeDecoderLike, opset=17, external=False, training="eval",
         inputs=[{"name": "latent", "dtype": "float32", "distribution": "normal"}], outputs=["sample"],
         example={"latent": [1, 4, 8, 8]},
         dynamic_axes={"latent": {0: "batch", 2: "height", 3: "width"},
                       "sample": {0: "batch", 2: "out_height", 3: "out_width"}},
         cases=[{"latent": [1, 4, 8, 8]}, {"latent": [1, 4, 12, 16]}]),
    dict(name="vae_decoder_custom", build=VaeDecoderCustom, opset=17, external=False, training="eval",
         inputs=[{"name": "latent", "dtype": "float32", "distribution": "normal"}], outputs=["sample"],
         example={"latent": [1, 4, 8, 8]},
         dynamic_axes={"latent": {0: "batch", 2: "height", 3: "width"},
                       "sample": {0: "batch", 2: "out_height", 3: "out_width"}},
         cases=[{"latent": [1, 4, 8, 8]}, {"latent": [2, 4, 6, 10]}]),
    dict(name="clip_text_like", build=ClipTextLike, opset=17, external=False, training="eval",
         inputs=[{"name": "input_ids", "dtype": "int64", "range": [0, 999], "last_value": 999}],
         outputs=["last_hidden_state", "pooled_output"],
         example={"input_ids": [1, 7]},
         dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                       "last_hidden_state": {0: "batch", 1: "seq"}, "pooled_output": {0: "batch"}},
         cases=[{"input_ids": [1, 7]}, {"input_ids": [2, 16]}]),
]


def export_one(spec, out_dir):
    torch.manual_seed(model_data.name_seed(spec["name"], "torch") % (2 ** 31))
    model = spec["build"]()
    _randomize_norm_stats(model, model_data.name_seed(spec["name"], "norm") % (2 ** 31))
    model.eval()
    feeds = model_data.make_inputs({"name": spec["name"], "inputs": spec["inputs"]}, spec["example"], 0)
    args = tuple(torch.from_numpy(feeds[i["name"]]) for i in spec["inputs"])
    mode = {"eval": torch.onnx.TrainingMode.EVAL, "preserve": torch.onnx.TrainingMode.PRESERVE}[spec["training"]]
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buf, dynamo=False, opset_version=spec["opset"],
                          input_names=[i["name"] for i in spec["inputs"]], output_names=spec["outputs"],
                          dynamic_axes=spec["dynamic_axes"], training=mode, do_constant_folding=True)
    proto = onnx.load_from_string(buf.getvalue())
    proto.producer_name = "onnx2ggml-export_models (torch %s)" % torch.__version__.split("+")[0]
    proto.doc_string = ""
    path = os.path.join(out_dir, spec["name"] + ".onnx")
    onnx.checker.check_model(proto, full_check=True)
    data_size = 0
    if spec["external"]:
        data_size = model_data.externalize_initializers(proto, spec["name"] + ".onnx.data")
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{spec['name']}: {os.path.getsize(path)} bytes graph"
          + (f", {data_size} bytes external data (regenerated)" if data_size else "")
          + f"; ops: {' '.join(ops)}")
    return proto, ops


def manifest_entry(spec, ops):
    entry = {
        "name": spec["name"],
        "file": spec["name"] + ".onnx",
        "opset": spec["opset"],
        "external_data": bool(spec["external"]),
        "inputs": spec["inputs"],
        "outputs": spec["outputs"],
        "cases": spec["cases"],
        "tolerance": {"rel": spec.get("tol", DEFAULT_TOL)},
        "ops": ops,
    }
    return entry


def format_manifest(manifest):
    """JSON with one line per model field (diff-friendly, compact)."""
    lines = ["{", f' "comment": {json.dumps(manifest["comment"])},', ' "models": [']
    for i, entry in enumerate(manifest["models"]):
        fields = [f'   {json.dumps(k)}: {json.dumps(v)}' for k, v in entry.items()]
        lines.append("  {\n" + ",\n".join(fields) + "\n  }" + ("," if i + 1 < len(manifest["models"]) else ""))
    lines += [" ]", "}", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(REPO, "tests", "models"))
    ap.add_argument("--only", default=None, help="regex of model names to (re)export; others keep their manifest entry")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    manifest_path = os.path.join(args.out_dir, "manifest.json")
    old = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = {e["name"]: e for e in json.load(f).get("models", [])}

    entries = []
    for spec in SPECS:
        if args.only and not re.search(args.only, spec["name"]):
            if spec["name"] in old:
                entries.append(old[spec["name"]])
            continue
        _, ops = export_one(spec, args.out_dir)
        entries.append(manifest_entry(spec, ops))

    examples = os.path.join(REPO, "examples", "small_cnn.onnx")
    if os.path.exists(examples):
        entries.append({
            "name": "example_small_cnn", "file": "../../examples/small_cnn.onnx", "opset": 13,
            "external_data": False,
            "inputs": [{"name": "image", "dtype": "float32", "distribution": "normal"}],
            "outputs": ["probs"], "cases": [{"image": [1, 3, 32, 32]}],
            "tolerance": {"rel": DEFAULT_TOL},
            "ops": sorted({n.op_type for n in onnx.load(examples).graph.node}),
        })

    manifest = {
        "comment": "Generated by scripts/export_models.py. rel tolerance = max|ours-ort| / max|ort| per output. "
                   "external_data models: data regenerated from seeds by tests/model_data.py.",
        "models": entries,
    }
    with open(manifest_path, "w") as f:
        f.write(format_manifest(manifest))
    print(f"wrote {manifest_path}")


if __name__ == "__main__":
    main()
