"""specviz web demo entry point (the Gradio app arrives with the UI issue)."""
import sys

if __name__ == "__main__":
    sys.exit("The web demo is not built yet; use `python -m specviz run --prompt ...` meanwhile.")
