() => {
  // Token panes scroll inside their box and follow the newest token, unless the reader has
  // scrolled up (then they stay put until the reader scrolls back to the bottom). Gradio may
  // replace the inner scrolling element on an update, so the state lives on the stable outer box.
  const FOLLOW_PX = 40;
  const scroller = (box) => box.querySelector(".prose.token-pane") || box;
  const watch = (box) => {
    if (box.dataset.follow) return;
    box.dataset.follow = "1";
    let ours = -1;    // the scrollTop this script last set: its own scroll events are not the reader's
    box.addEventListener("scroll", (event) => {
      const pane = event.target;
      if (!pane.classList || !pane.classList.contains("token-pane") || Math.abs(pane.scrollTop - ours) < 2) return;
      box.dataset.follow = pane.scrollHeight - pane.scrollTop - pane.clientHeight < FOLLOW_PX ? "1" : "0";
    }, true);        // capture: scroll events do not bubble
    new MutationObserver(() => {
      const pane = scroller(box);
      if (pane.scrollHeight <= pane.clientHeight + FOLLOW_PX) box.dataset.follow = "1";  // a new run
      if (box.dataset.follow === "1") {
        pane.scrollTop = pane.scrollHeight;
        ours = pane.scrollTop;
      }
    }).observe(box, { childList: true, subtree: true, characterData: true });
  };
  const scan = () => document.querySelectorAll(".block.token-pane").forEach(watch);
  scan();
  setInterval(scan, 1000);

  // Token and figure details: one popover for every element with a data-tip (render.py writes it,
  // escaped; it is shown as text, never as HTML). Hover shows it while the pointer stays; a click,
  // a tap or Enter/Space on the focused element pins it; Escape, a second tap or a click elsewhere
  // closes it. One at a time.
  const pop = document.createElement("div");
  pop.id = "tip-pop";
  pop.className = "tip-pop";
  pop.setAttribute("role", "tooltip");
  pop.hidden = true;
  document.body.appendChild(pop);
  let owner = null, pinned = false;
  const place = (el) => {
    // At least EDGE px from every side of the window (a phone's rounded corners and bezel hid a 4 px margin).
    const EDGE = 10, r = el.getBoundingClientRect(), w = pop.offsetWidth, h = pop.offsetHeight;
    const width = document.documentElement.clientWidth;     // without a desktop's scrollbar
    let left = Math.min(Math.max(EDGE, r.left), width - w - EDGE);
    let top = r.bottom + 6;
    if (top + h > window.innerHeight - EDGE) top = Math.max(EDGE, r.top - h - 6);
    pop.style.left = left + "px";
    pop.style.top = top + "px";
  };
  const open = (el, pin) => {
    if (owner && owner !== el) owner.removeAttribute("aria-describedby");
    owner = el;
    pinned = pin;
    pop.textContent = el.dataset.tip;
    pop.hidden = false;
    el.setAttribute("aria-describedby", "tip-pop");
    place(el);
  };
  const close = () => {
    if (owner) owner.removeAttribute("aria-describedby");
    owner = null;
    pinned = false;
    pop.hidden = true;
  };
  const tipOf = (node) => (node && node.closest ? node.closest("[data-tip]") : null);
  document.addEventListener("mouseover", (event) => {
    const el = tipOf(event.target);
    if (el && !pinned) open(el, false);
  });
  document.addEventListener("mouseout", (event) => {
    const el = tipOf(event.target);
    if (el && el === owner && !pinned && !el.contains(event.relatedTarget)) close();
  });
  document.addEventListener("click", (event) => {
    const el = tipOf(event.target);
    if (!el) { if (!(event.target.closest && event.target.closest("#tip-pop"))) close(); return; }
    if (el === owner && pinned) close(); else open(el, true);     // a second tap closes
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && owner) { const el = owner; close(); el.focus && el.focus(); return; }
    const el = tipOf(event.target);
    if (!el || event.target !== el || (event.key !== "Enter" && event.key !== " ")) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    if (el === owner && pinned) close(); else open(el, true);
  }, true);
  window.addEventListener("scroll", () => { if (owner) { if (owner.isConnected) place(owner); else close(); } }, true);

  // Narrow screens: less margin (style.css), and the settings fold away, so the prompt, Run and the
  // race come first.
  const narrow = () => document.body.classList.toggle("narrow", window.innerWidth < 640);
  narrow();
  window.addEventListener("resize", narrow);
  // body[data-settings-fold="done"] says the fold has happened (or was not needed): until then a
  // phone's settings may still be open, and a tap on their header would be undone by the fold.
  if (window.innerWidth < 640) {
    const fold = () => {
      const head = document.querySelector("#settings > button, #settings .label-wrap");
      if (!head) { setTimeout(fold, 200); return; }
      if (head.classList.contains("open") || head.getAttribute("aria-expanded") === "true") head.click();
      document.body.dataset.settingsFold = "done";
    };
    fold();
  } else {
    document.body.dataset.settingsFold = "done";
  }

  // Step mode from the keyboard: the right arrow or the space bar is "Next round" (not while typing).
  document.addEventListener("keydown", (event) => {
    if (event.target.closest && event.target.closest("input, textarea, select, button, [contenteditable], [data-tip]")) return;
    if (event.key !== "ArrowRight" && event.key !== " ") return;
    const step = document.querySelector("#step");
    if (!step || step.offsetParent === null) return;      // the step tab is not showing
    event.preventDefault();
    step.click();
  });
}
