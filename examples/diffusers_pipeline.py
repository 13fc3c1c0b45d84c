#!/usr/bin/env python3
"""Text to image with diffusers' OnnxStableDiffusionPipeline, its ONNX parts run by onnx2ggml instead of onnxruntime.

Usage: examples/diffusers_pipeline.py [--model DIR] [--prompt TEXT] [--steps N] [--size PX] [--seed S]
                                      [--device NAME] [--progress] [-o IMAGE.png]
DIR is a diffusers ONNX pipeline folder (model_index.json, text_encoder/model.onnx, unet/model.onnx, ...). Without
it, the small SD 1.5 fixtures of tests/models/sd15_small are laid out as one in a temporary folder: their weights are
random, so the image shows the plumbing works, not a picture. The denoising loop draws diffusers' progress bar with
steps per second when stdout is a terminal, or with --progress. Needs diffusers and torch
(scripts/setup.sh --with-torch) and `pip install .`.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="diffusers ONNX pipeline folder (default: the small SD 1.5 fixtures)")
    ap.add_argument("--prompt", default="a watercolor painting of a red fox in the snow")
    ap.add_argument("--negative-prompt", default="blurry, low quality")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--size", type=int, default=256, help="width and height in pixels")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="", help="ggml device (CPU, CUDA0, Vulkan0); default: the best there is")
    ap.add_argument("--progress", action="store_true", help="draw the progress bar even when stdout is not a terminal")
    ap.add_argument("-o", "--out", default="diffusers_pipeline.png")
    args = ap.parse_args()

    import diffusers
    import onnx2ggml
    from onnx2ggml.diffusers import load_pipeline

    show = args.progress or sys.stdout.isatty()
    if not show:
        diffusers.utils.logging.disable_progress_bar()  # the "Loading pipeline components" bar too
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if not model:
            sys.path.insert(0, os.path.join(REPO, "scripts"))
            from sd15_onnx_pipeline import make_pipeline_dir
            model = make_pipeline_dir(os.path.join(tmp, "sd15_small_onnx"))
        opts = onnx2ggml.SessionOptions()
        opts.device = args.device
        t0 = time.time()
        pipe = load_pipeline(model, sess_options=opts)
        print(f"loaded {model} in {time.time() - t0:.1f} s", flush=True)
        pipe.set_progress_bar_config(disable=not show, unit="step", file=sys.stdout)
        t0 = time.time()
        image = pipe(args.prompt, negative_prompt=args.negative_prompt, height=args.size, width=args.size,
                     num_inference_steps=args.steps, generator=np.random.RandomState(args.seed)).images[0]
    image.save(args.out)
    print(f"{args.steps} steps in {time.time() - t0:.1f} s; wrote {args.out} ({image.width}x{image.height})")


if __name__ == "__main__":
    main()
