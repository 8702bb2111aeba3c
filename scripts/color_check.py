"""Are the four token kinds told apart without full color vision? Measured on a screenshot.

The app's legend (accepted, rejected, resampled, bonus) is rendered in Chromium in the light and
the dark theme; each kind's swatch is cut out of the screenshot and its median pixel taken. The
pixels are then transformed as people with protanopia and deuteranopia see them (Machado, Oliveira
and Fernandes 2009, severity 1.0, applied in linear RGB) and as grayscale (Rec. 709 luminance),
and for every pair of kinds the CIELAB distance (Delta E 1976) is measured. About 2.3 is a just
noticeable difference; the script also prints each kind's text-on-background contrast (WCAG).
The kinds never rely on color alone (strike-through, outline and bold, double underline), so this
checks the color channel on its own.

    python scripts/color_check.py [--out benchmarks/color-check.json]
"""
import argparse
import itertools
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

KINDS = ("accepted", "rejected", "resampled", "bonus")
# Machado et al. 2009, severity 1.0, for linear RGB.
MATRICES = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}


def to_linear(srgb):
    c = np.asarray(srgb, dtype=float) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def to_lab(linear):
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(linear, condition: str):
    if condition == "grayscale":
        y = float(np.dot([0.2126, 0.7152, 0.0722], linear))
        return np.array([y, y, y])
    return np.clip(MATRICES[condition] @ linear, 0, 1)


def luminance(linear) -> float:
    return float(np.dot([0.2126, 0.7152, 0.0722], linear))


def contrast(a, b) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def swatches(dark: bool) -> dict[str, dict[str, np.ndarray]]:
    """Median background and text pixels of each kind's legend swatch, from a screenshot."""
    from io import BytesIO

    from PIL import Image
    from playwright.sync_api import sync_playwright

    from specviz.app.state import AppState
    from specviz.view.serve import serve
    demo, url = serve(AppState(device="cpu"))
    out = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=2)
            page.goto(url + ("/?__theme=dark" if dark else ""))
            page.wait_for_selector("#legend .tok-accepted")
            image = Image.open(BytesIO(page.screenshot())).convert("RGB")
            pixels = np.asarray(image).reshape(-1, 3)
            array = np.asarray(image)
            for kind in KINDS:
                box = page.locator(f"#legend .tok-{kind}").bounding_box()
                x0, y0 = int(box["x"] * 2) + 4, int(box["y"] * 2) + 4
                x1, y1 = int((box["x"] + box["width"]) * 2) - 4, int((box["y"] + box["height"]) * 2) - 4
                patch = array[y0:y1, x0:x1].reshape(-1, 3).astype(float)
                background = np.median(patch, axis=0)
                # Text pixels: those farthest from the background.
                far = np.linalg.norm(patch - background, axis=1)
                text = np.median(patch[far >= np.quantile(far, 0.9)], axis=0)
                out[kind] = {"background": background, "text": text}
            del pixels
            browser.close()
    finally:
        demo.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    report = {}
    for theme in ("light", "dark"):
        colors = swatches(theme == "dark")
        report[theme] = {"swatches": {k: [int(x) for x in v["background"]] for k, v in colors.items()}}
        for condition in ("normal", "protanopia", "deuteranopia", "grayscale"):
            lab = {k: to_lab(seen(to_linear(v["background"]), condition)) for k, v in colors.items()}
            pairs = {f"{a}/{b}": round(float(np.linalg.norm(lab[a] - lab[b])), 1)
                     for a, b in itertools.combinations(KINDS, 2)}
            text = {k: round(contrast(seen(to_linear(v["text"]), condition), seen(to_linear(v["background"]),
                                                                                   condition)), 2)
                    for k, v in colors.items()}
            worst = min(pairs, key=pairs.get)
            report[theme][condition] = {"delta_e": pairs, "closest_pair": worst, "text_contrast": text}
            print(f"{theme:5} {condition:12} closest pair {worst:20} dE {pairs[worst]:5.1f}   "
                  f"text contrast {min(text.values()):.1f}-{max(text.values()):.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
