"""What a server needs besides Gradio: the hosting profile, the request (validated and tokenized
in one place), the pair cache, the GPU-call boundary (ZeroGPU), the /generate API's logic,
machine load, and the workshop's exercises as logic. The view (specviz/view/) draws; this decides.
"""
