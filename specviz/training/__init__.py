"""Everything that trains or builds models: the bundled pair, the SmolLM2 drafts, their data.

Nothing the app, the engine, the models' loading or the view runs imports this package
(tests/test_layering.py checks it): a server needs only specviz.models to load what was built here.
"""
