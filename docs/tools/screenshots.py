"""Take the README's screenshots: the respondent page on a phone and a results page on a desktop.

Usage (from the repository, with the package and its test extra installed):
    python docs/tools/screenshots.py [--chromium /usr/bin/chromium]

Runs `ldp-survey demo` on a throwaway database (20,000 simulated respondents), signs in with
the printed password, and writes docs/images/respondent-phone.png (360 px wide, the top of the
page with a question answered) and docs/images/results-desktop.png (1280 px wide, the top of
the results page), each reduced to a 256-colour palette to stay small.
"""

from __future__ import annotations

import argparse
import io
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

IMAGES = Path(__file__).resolve().parent.parent / "images"
SLUG = "smoking-2026"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_demo(directory: Path, port: int) -> tuple[subprocess.Popen, str]:
    """Start the demo server; return it and the researcher password it printed."""
    process = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(directory / "demo.db"), "demo",
                                "--respondents", "20000", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    password, output = None, []
    for line in process.stdout:
        output.append(line)
        match = re.match(r"Password:\s+(\S+)", line)
        if match:
            password = match.group(1)
        if line.startswith("Serving ") or "press Ctrl+C" in line:
            break
    if password is None:
        process.kill()
        raise SystemExit("the demo did not start:\n" + "".join(output))
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process, password
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the demo server did not answer /healthz")


def save(png: bytes, name: str) -> None:
    """Write a screenshot as a 256-colour PNG and say its size."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    path = IMAGES / name
    image.save(path, optimize=True)
    print(f"{path}: {image.width}x{image.height}, {path.stat().st_size / 1024:.0f} KB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="Chromium to drive (default: Debian's)")
    args = parser.parse_args()
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as directory:
        process, password = start_demo(Path(directory), port)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                phone = browser.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2,
                                            is_mobile=True, has_touch=True)
                page = phone.new_page()
                page.goto(f"{origin}/s/{SLUG}")
                page.get_by_role("radio").first.check()
                save(page.screenshot(), "respondent-phone.png")
                desktop = browser.new_context(viewport={"width": 1280, "height": 860})
                page = desktop.new_page()
                page.goto(f"{origin}/login")
                page.get_by_label("Email").fill("demo@example.org")
                page.get_by_label("Password").fill(password)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(re.compile("/surveys$"))
                page.goto(f"{origin}/surveys/{SLUG}/results")
                save(page.screenshot(), "results-desktop.png")
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=40)


if __name__ == "__main__":
    main()
