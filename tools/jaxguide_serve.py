"""Serve the built site on 127.0.0.1, gzip-compressed as GitHub Pages serves it
(``make serve``; the server is :mod:`jaxguide_build.serve`).

    python tools/jaxguide_serve.py _build/html --port 8000
"""

from jaxguide_build.serve import main

if __name__ == "__main__":
    main()
