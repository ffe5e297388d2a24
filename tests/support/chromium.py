"""Debian's Chromium as the console's browser tests and bench.console launch it (by path: no
download), without the parts of the browser's own interface that no page asks for.

Chromium 156 builds its omnibox popup (chrome://omnibox-popup.top-chrome, the address bar's
suggestion list and its AI-mode "composebox") as WebUI pages in a renderer of their own, for every
new window, although a headless browser never shows an address bar: some 400 files and about half
a second of CPU in each window, measured running beside the page's own work (in bench.console,
beside the sign-in's password hash on a 2-core machine). The features below turn that interface
off; what a page does and how Chromium draws it stay as they were.
"""

from __future__ import annotations

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NO_BROWSER_INTERFACE = (
    "--disable-features=PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup,"
    "WebUIOmniboxFullPopup"
)
CHROMIUM_ARGS = ["--no-sandbox", NO_BROWSER_INTERFACE]
