"""An HTML block that grows by appending: the token panes and the round timeline while a race streams.

Gradio sends a string update as an append when the new value starts with the old one, but its HTML
component then re-parses and re-walks the whole value on every update (its morph compares each old
node with a new one), so a 128-token pane cost the browser more per update as the race went on.
Here the block's template is a fixed empty box, never re-rendered; its script (fixed text, no model
output ever reaches it) watches the value and inserts only the new tail, parsed once, at the end of
the box. A value that does not extend the last one (a new race, a cleared pane, a replay) replaces
the box's content whole.

The race's live feed (view/live_channel.py) appends through the box's `liveFeed`, on the same rules.

While `body[data-race-stopped]` is set (assets/page.js sets it when Stop is clicked, clears it on Run)
nothing more is appended: no token shows after "Stopped.". The value itself still arrives, so the
next value that does not extend it (the next race) draws from scratch.
"""
from __future__ import annotations

import gradio as gr

TEMPLATE = '<div class="live-box"></div>'
# Runs once per block, in the browser, with Gradio's `element`, `props` and `watch`.
APPEND_ONLY = """
const box = element.querySelector('.live-box');
let shown = '';
const draw = () => {
  const now = typeof props.value === 'string' ? props.value : '';
  if (now === shown) return;
  const extends_ = shown !== '' && now.startsWith(shown);
  if (extends_ && document.body.dataset.raceStopped === '1') return;
  if (extends_) box.insertAdjacentHTML('beforeend', now.slice(shown.length));
  else box.innerHTML = now;
  shown = now;
  box.dispatchEvent(new CustomEvent('live-grew', { bubbles: true }));
};
// The race's live feed (view/live_channel.py, read by assets/page.js) appends here too: `at` is the
// length it follows, so an update that comes after the value has grown past it (the race's last
// Gradio update came first) is dropped, never shown twice; `at` < 0 replaces the content.
box.liveFeed = (at, html) => {
  if (at < 0) { box.innerHTML = html; shown = html; }
  else if (at !== shown.length || document.body.dataset.raceStopped === '1') return;
  else { box.insertAdjacentHTML('beforeend', html); shown += html; }
  box.dispatchEvent(new CustomEvent('live-grew', { bubbles: true }));
};
draw();
watch('value', draw);
"""


def live_html(value: str = "", **kwargs) -> gr.HTML:
    """A gr.HTML whose updates are appended in the browser (module docstring); kwargs as gr.HTML's."""
    return gr.HTML(value, html_template=TEMPLATE, js_on_load=APPEND_ONLY, **kwargs)
