#!/usr/bin/env python3
"""onnx2ggml as a drop-in for onnxruntime under diffusers: OnnxStableDiffusionPipeline on the small SD 1.5 fixtures
(laid out by scripts/sd15_onnx_pipeline.py), run once with onnxruntime sessions (diffusers' default) and once through
onnx2ggml.diffusers.load_pipeline, from the same prompt and initial latents (2 DDIM steps, 256x256). The final latents
(taken from the step callback, since the ONNX pipeline always decodes) must agree within 1e-4 of their range, and with
the PyTorch pipeline's latent scripts/sd15_txt2img_reference.py saved for the same prompt and noise; the decoded
images too. The image onnx2ggml made must be written as a PNG. A control run from other initial noise must be outside
the bar, so the comparison can fail. Then textual inversion: onnx2ggml.diffusers.load_textual_inversion and
expand_prompt on the same pipeline against diffusers' PyTorch pipeline with load_textual_inversion
(tests/models/embeddings, scripts/embedding_reference.py).

Usage: .venv/bin/python tests/diffusers_dropin_test.py [--out IMAGE.png] [--latent-seed N]
(needs diffusers, torch, onnxruntime and `pip install .`; --latent-seed gives onnx2ggml other noise: the test fails)
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
import metrics  # noqa: E402
from sd15_onnx_pipeline import make_pipeline_dir  # noqa: E402

REF = os.path.join(REPO, "tests/models/sd15_small/txt2img")
TOL = 1e-4  # of the reference's range
failures = []


def check(cond, what):
    print(f"  {'ok  ' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        failures.append(what)


def run(pipe, latents, output_type="np"):
    """The final latent (from the callback after the last step) and the decoded image."""
    with open(os.path.join(REF, "prompt.json")) as f:
        p = json.load(f)
    steps = []
    out = pipe(p["prompt"], negative_prompt=p["negative_prompt"], height=256, width=256, num_inference_steps=2,
               guidance_scale=7.5, latents=latents.copy(), output_type=output_type,
               callback=lambda i, t, lat: steps.append(lat.copy()))
    assert len(steps) == 2, len(steps)
    return steps[-1], out.images


def textual_inversion(pipe, init):
    """The SD 1.5 txt2img case of tests/models/embeddings/cases.json through the ONNX pipeline."""
    from onnx2ggml.diffusers import expand_prompt, load_textual_inversion
    emb = os.path.join(REPO, "tests/models/embeddings")
    with open(os.path.join(emb, "cases.json")) as f:
        t = next(x for x in json.load(f)["txt2img"] if x["family"] == "sd15")
    load_textual_inversion(pipe, [os.path.join(emb, e) for e in t["embeddings"]])
    steps = []
    pipe(expand_prompt(pipe, t["prompt"]), negative_prompt=expand_prompt(pipe, t["negative"]), height=t["size"],
         width=t["size"], num_inference_steps=t["steps"], guidance_scale=t["guidance"], latents=init.copy(),
         output_type="np", callback=lambda i, ts, lat: steps.append(lat.copy()))
    compare("textual inversion: final latent, onnx2ggml vs PyTorch with load_textual_inversion",
            np.load(os.path.join(emb, t["latent"])), steps[-1])


def compare(label, ref, got):
    """True when within the bar; prints max abs error and the error relative to the reference's range."""
    e = metrics.errors(ref, got)
    rel = e.abs / float(np.ptp(ref))
    check(ref.shape == got.shape and rel <= TOL, f"{label}: max abs {e.abs:.3g}, relative to range {rel:.3g}"
          f" (range {np.ptp(ref):.4g}, bar {TOL:g})")
    return rel <= TOL


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="where to write onnx2ggml's image (default: a temporary folder)")
    ap.add_argument("--latent-seed", type=int, help="give onnx2ggml's run other initial noise (the test must fail)")
    args = ap.parse_args()

    import diffusers
    from diffusers import OnnxStableDiffusionPipeline
    from onnx2ggml.diffusers import load_pipeline
    diffusers.utils.logging.disable_progress_bar()
    diffusers.utils.logging.set_verbosity_error()  # deprecation notices of the ONNX pipeline

    init = np.load(os.path.join(REF, "init_latent.npy"))
    ours_init = init if args.latent_seed is None else \
        np.random.RandomState(args.latent_seed).randn(*init.shape).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_pipeline_dir(os.path.join(tmp, "pipeline"))
        ort_pipe = OnnxStableDiffusionPipeline.from_pretrained(folder, provider="CPUExecutionProvider",
                                                               provider_options={})
        ours = load_pipeline(folder, provider="CPUExecutionProvider")
        for pipe in (ort_pipe, ours):
            pipe.set_progress_bar_config(disable=True)
        print("parts:", {k: type(v.model).__module__ for k, v in ours.components.items() if hasattr(v, "model")})
        check(all(type(ours.components[k].model).__module__.startswith("onnx2ggml")
                  for k in ("text_encoder", "unet", "vae_decoder")), "load_pipeline: every part on onnx2ggml")
        ref_lat, ref_img = run(ort_pipe, init)
        lat, img = run(ours, ours_init)
        compare("final latent, onnx2ggml vs onnxruntime", ref_lat, lat)
        compare("final latent, onnx2ggml vs PyTorch", np.load(os.path.join(REF, "ref_latent_prompt.npy")), lat)
        compare("decoded image, onnx2ggml vs onnxruntime", ref_img, img)
        # Control: onnxruntime from other noise must miss the bar, or the comparison proves nothing.
        other = np.random.RandomState(7).randn(*init.shape).astype(np.float32)
        far = metrics.errors(ref_lat, run(ort_pipe, other)[0]).abs / float(np.ptp(ref_lat))
        check(far > TOL, f"control: other initial noise is {far:.3g} of the range away (must exceed {TOL:g})")

        out = args.out or os.path.join(tmp, "dropin.png")
        _, pil = run(ours, ours_init, output_type="pil")
        pil[0].save(out)
        from PIL import Image
        with Image.open(out) as im:
            check(im.format == "PNG" and im.size == (256, 256) and os.path.getsize(out) > 0,
                  f"image written: {out} ({im.format}, {im.size[0]}x{im.size[1]})")
        textual_inversion(ours, init)
    print("diffusers drop-in:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
