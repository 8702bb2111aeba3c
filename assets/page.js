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
    // Followed once a frame, in the frame's own layout: reading scrollHeight in the observer itself
    // forced a layout per pane per update, which the next pane's update then dirtied again.
    let queued = false;
    const follow = () => {
      queued = false;
      const pane = scroller(box);
      if (pane.scrollHeight <= pane.clientHeight + FOLLOW_PX) box.dataset.follow = "1";  // a new run
      if (box.dataset.follow === "1") {
        pane.scrollTop = pane.scrollHeight;
        ours = pane.scrollTop;
      }
    };
    new MutationObserver(() => {
      if (!queued) { queued = true; requestAnimationFrame(follow); }
    }).observe(box, { childList: true, subtree: true, characterData: true });
  };
  // The share button shows a link sign only: its name for a hover and a screen reader.
  const name = (button) => {
    if (!button || button.title) return;
    button.title = "Copy a link to this race (its settings and prompt)";
    button.setAttribute("aria-label", "Copy a link to this race");
  };
  const scan = () => {
    document.querySelectorAll(".block.token-pane").forEach(watch);
    name(document.querySelector("#copy-link"));
  };
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
    // Projector mode zooms the body, the popover with it: its left and top are zoomed CSS pixels, while
    // the token's rectangle and the window are the screen's, so every length is read in screen pixels
    // and set divided by the zoom (unzoomed, it ran off a projector's right edge).
    const z = parseFloat(getComputedStyle(document.body).zoom) || 1;
    const EDGE = 10, r = el.getBoundingClientRect(), w = pop.offsetWidth * z, h = pop.offsetHeight * z;
    const width = document.documentElement.clientWidth;     // without a desktop's scrollbar
    let left = Math.min(Math.max(EDGE, r.left), width - w - EDGE);
    let top = r.bottom + 6;
    if (top + h > window.innerHeight - EDGE) {
      // Below the token, else above it; where neither holds it (a projector's zoomed picture), the side with
      // more room, scrolling inside: never over its own token (the pointer there would close and reopen it).
      const above = r.top - 6 - EDGE, below = window.innerHeight - EDGE - top;
      if (h <= above) top = r.top - h - 6;
      else {
        if (above > below) top = EDGE;
        pop.style.maxHeight = (Math.max(above, below) / z) + "px";
        pop.style.overflowY = "auto";
      }
    }
    pop.style.left = (left / z) + "px";
    pop.style.top = (top / z) + "px";
  };
  // A judged token's picture (render.py's data-pic: numbers and token texts, set as text only): p and q
  // over the position's most likely tokens, each bar split where they overlap (green: min(p, q), the
  // mass a draft keeps), where p exceeds q (amber: the residual a correction is drawn from) and where
  // q exceeds p (red: what the draft over-proposes, where rejections come from); then u against the
  // keep probability.
  const node = (tag, cls, text) => {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const num = (x) => (x > 0 && x < 0.01 ? x.toPrecision(2) : x.toFixed(3));
  const drawPicture = (d) => {
    const box = node("div", "pic");
    const withQ = d.rows.some((r) => r[2] !== null);
    const scale = Math.max(1e-9, ...d.rows.map((r) => Math.max(r[1], r[2] || 0)));
    box.appendChild(node("div", "pic-head", withQ ? "each token: p (target) above, q (draft) below"
                                                  : "p (target) over its most likely tokens"));
    for (const [label, p, q, mark] of d.rows) {
      const row = node("div", "pic-row" + (mark ? " pic-" + mark : ""));
      row.appendChild(node("span", "pic-tok", label));
      const track = node("span", "pic-track");
      const bar = (cls, from, to) => {
        if (to <= from) return;
        const b = node("span", cls);
        b.style.left = (100 * from / scale) + "%";
        b.style.width = (100 * (to - from) / scale) + "%";
        track.appendChild(b);
      };
      const both = q === null ? 0 : Math.min(p, q);
      bar("pic-p pic-ov", 0, both);
      bar("pic-p " + (q === null ? "pic-plain" : "pic-res"), both, p);
      if (q !== null) { bar("pic-q pic-ov", 0, both); bar("pic-q pic-over", both, q); }
      row.appendChild(track);
      row.appendChild(node("span", "pic-num", q === null ? num(p) : num(p) + " / " + num(q)));
      row.appendChild(node("span", "pic-mark", mark === "draft" ? "◀ draft" : mark === "drawn" ? "◀ drawn" : ""));
      box.appendChild(row);
    }
    if (d.rule === "argmax") {
      box.appendChild(node("div", "pic-note",
        "greedy: a draft is kept only if it is p's most likely token (the top row); otherwise that token " +
        "replaces it. Sampling instead keeps a draft from q with chance Σ min(p, q) = " + num(d.overlap) + "."));
    } else if (d.overlap !== null && d.overlap !== undefined) {
      box.appendChild(node("div", "pic-note",
        "green: overlap Σ min(p, q) = " + num(d.overlap) + ", the chance a draft from q is kept here. " +
        "Amber: max(0, p − q), the residual a correction is drawn from (" + num(1 - d.overlap) + " of p): " +
        "exactly what q under-covers, so kept drafts plus corrections give back p."));
    }
    if (d.u !== null && d.u !== undefined && d.accept !== null && d.accept !== undefined) {
      const line = node("div", "pic-draw");
      const track = node("span", "pic-unit");
      const fill = node("span", "pic-keep");
      fill.style.width = (100 * d.accept) + "%";
      const mark = node("span", "pic-u");
      mark.style.left = (100 * d.u) + "%";
      track.append(fill, mark);
      const kept = d.u < d.accept;
      line.append(track, node("span", "pic-num", "u = " + num(d.u) + (kept ? " < " : " ≥ ") + num(d.accept) +
                              (kept ? ": kept" : ": thrown away")));
      box.appendChild(line);
    }
    return box;
  };
  const details = (el) => {
    const part = [node("div", "tip-text", el.dataset.tip)];
    if (el.dataset.pic) {
      try { part.push(drawPicture(JSON.parse(el.dataset.pic))); } catch (err) { /* text stays */ }
    }
    return part;
  };
  // In the Text view a correction stands for the drafts thrown away where it stands (hidden there, just
  // before it): its details open with theirs, then its own.
  const thrownBefore = (el) => {
    const out = [];
    if (!el.classList.contains("tok-resampled") || !el.closest('#spec-pane[data-view="text"]')) return out;
    for (let n = el.previousElementSibling; n && n.classList.contains("tok-rejected"); n = n.previousElementSibling) out.unshift(n);
    return out;
  };
  // A token picked (click, tap, Enter) docks its details and p-and-q picture in a panel at the panes' text
  // size: the lower right of a wide screen, beside the panes; a bottom sheet on a phone (style.css,
  // .tip-pop.docked). Hover still floats them beside the token. Step mode's tokens dock the same way.
  const dockClose = node("button", "dock-close", "×");
  dockClose.type = "button";
  dockClose.setAttribute("aria-label", "Close the details");
  dockClose.addEventListener("click", (event) => { event.stopPropagation(); const el = owner; close(); if (el && el.focus) el.focus(); });
  // On a wide screen the docked details go beside the pane of the token they explain, over the side with
  // more room (the plain pane, or the settings), so neither that token nor both panes are covered: at
  // 1280x720 in projector mode its 34em once took the whole right side, the token's pane with it. Lengths
  // are read in screen pixels and set divided by the zoom, as `place` does.
  const DOCK_EDGE = 12, DOCK_LEAST = 260;
  const dockBeside = (el) => {
    const z = parseFloat(getComputedStyle(document.body).zoom) || 1;
    const width = document.documentElement.clientWidth, height = window.innerHeight;
    const room = (r) => ({ left: r.left - 2 * DOCK_EDGE, right: width - r.right - 2 * DOCK_EDGE });
    // the pane's whole block (its border too), not only its scrolling text
    const pane = el.closest(".block.token-pane") || el.closest(".token-pane, #step-explain, .tree-draw");
    let free = room((pane || el).getBoundingClientRect());
    if (Math.max(free.left, free.right) < DOCK_LEAST) free = room(el.getBoundingClientRect());  // beside the token, then
    const onRight = free.right >= free.left;
    const ideal = Math.min(34 * parseFloat(getComputedStyle(pop).fontSize) * z, 0.46 * width);
    const w = Math.max(Math.min(ideal, onRight ? free.right : free.left), Math.min(ideal, DOCK_LEAST));
    pop.style.width = (w / z) + "px";
    pop.style.left = ((onRight ? width - DOCK_EDGE - w : DOCK_EDGE) / z) + "px";
    pop.style.right = "auto";
    pop.style.maxHeight = ((height - 2 * DOCK_EDGE) * 0.8 / z) + "px";
  };
  const open = (el, pin) => {
    if (owner && owner !== el) owner.removeAttribute("aria-describedby");
    owner = el;
    pinned = pin;
    const docked = pin && !!el.closest(".token-pane, #step-explain, .tree-draw");
    pop.classList.toggle("docked", docked);
    const thrown = thrownBefore(el);
    if (thrown.length) {
      const n = Number(el.dataset.thrown || thrown.length);
      const parts = [node("div", "tip-head", n === 1 ? "1 draft thrown away here:" : n + " drafts thrown away here (the first judged, the rest after it):")];
      for (const r of thrown) parts.push(...details(r));
      parts.push(node("div", "tip-head", "The target's correction:"), ...details(el));
      pop.replaceChildren(...parts);
    } else {
      pop.replaceChildren(...details(el));
    }
    if (docked) pop.prepend(dockClose);
    pop.hidden = false;
    el.setAttribute("aria-describedby", "tip-pop");
    for (const k of ["left", "top", "right", "width", "maxHeight", "overflowY"]) pop.style[k] = "";
    if (docked) { pop.scrollTop = 0; if (!document.body.classList.contains("narrow")) dockBeside(el); } else place(el);
  };
  const close = () => {
    if (owner) owner.removeAttribute("aria-describedby");
    owner = null;
    pinned = false;
    pop.hidden = true;
  };
  // The race's why carries its whole sentence as a tip for a phone, where it is cut to two lines.
  const tipOf = (n) => {
    const el = n && n.closest ? n.closest("[data-tip]") : null;
    return el && el.classList.contains("why") && !document.body.classList.contains("narrow") ? null : el;
  };
  // Hover opens and closes by a mouse or pen only: a tap also sends pointerover/mouseover, and opening
  // there put the popover under the finger, the tap's click never came and the details closed again.
  // A tap opens and closes by its click alone.
  document.addEventListener("pointerover", (event) => {
    if (event.pointerType === "touch") return;
    const el = tipOf(event.target);
    if (el && !pinned) open(el, false);
  });
  document.addEventListener("pointerout", (event) => {
    if (event.pointerType === "touch") return;
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
  window.addEventListener("scroll", (event) => {
    if (!owner || (event.target && event.target.closest && event.target.closest("#tip-pop"))) return;
    if (!owner.isConnected) close(); else if (!pop.classList.contains("docked")) place(owner);
  }, true);

  // The speculative pane's view: "text" (the output as written, rejected drafts folded into marks) or
  // "rounds" (every draft inline, round bars, whitespace drawn). A switch above the pane, kept in the
  // browser across reloads; re-added if the page re-renders the column.
  const VIEWS = [["text", "Text"], ["rounds", "Rounds"]];
  const viewNow = () => { try { return localStorage.getItem("specviz-view") || "text"; } catch (e) { return "text"; } };
  const setView = (view) => {
    const pane = document.querySelector("#spec-pane");
    if (pane) pane.dataset.view = view;
    document.querySelectorAll(".view-switch").forEach((bar) => { bar.dataset.view = view; });
    document.querySelectorAll(".view-switch button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.view === view)));
    try { localStorage.setItem("specviz-view", view); } catch (e) { /* private mode: not kept */ }
  };
  const addSwitch = () => {
    const pane = document.querySelector("#spec-pane");
    if (!pane) return;
    if (!pane.dataset.view) pane.dataset.view = viewNow();
    if (pane.previousElementSibling && pane.previousElementSibling.classList.contains("view-switch")) return;
    const bar = node("div", "view-switch");
    bar.dataset.view = pane.dataset.view;
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", "How the speculative pane shows the text");
    for (const [view, label] of VIEWS) {
      const b = node("button", "", label);
      b.type = "button";
      b.dataset.view = view;
      b.setAttribute("aria-pressed", String(pane.dataset.view === view));
      b.addEventListener("click", () => setView(view));
      bar.appendChild(b);
    }
    // "click" with a mouse, "tap" on a touch screen (style.css shows one by the pointer: coarse query)
    const hint = node("span", "view-hint", "tinted: a correction; its number: the drafts thrown away; ");
    hint.append(node("span", "say-click", "click"), node("span", "say-tap", "tap"), " it");
    bar.appendChild(hint);
    pane.parentNode.insertBefore(bar, pane);
    // The plain pane gets an invisible twin of the switch, so both panes' text starts level.
    const base = document.querySelector("#base-pane");
    if (base && !(base.previousElementSibling && base.previousElementSibling.classList.contains("view-switch"))) {
      const twin = bar.cloneNode(true);
      twin.classList.add("view-spacer");
      twin.setAttribute("aria-hidden", "true");
      twin.querySelectorAll("button").forEach((b) => { b.tabIndex = -1; });
      base.parentNode.insertBefore(twin, base);
    }
  };
  addSwitch();
  setInterval(addSwitch, 1000);


  // Stop, at once: "Stopped." replaces the race's status the moment Stop is clicked (the server's own
  // last update, with its summary, follows when the lanes have ended), body[data-race-stopped] makes
  // the live panes and timeline take no more tokens (view/live_html.py) and both meters say stopped
  // (style.css). Run, Race 3x or a trace replay starts a fresh race and clears it.
  const RACING = /^(Starting|Racing|Waiting|Loading)/;
  document.addEventListener("click", (event) => {
    const t = event.target.closest ? event.target.closest("#stop, #run, #run3, #trace-load-go") : null;
    if (!t) return;
    if (t.id !== "stop") { delete document.body.dataset.raceStopped; return; }
    const status = document.querySelector("#status .status");
    const live = document.querySelector("#spec-meter .running, #base-meter .running");
    if (!live && !(status && RACING.test(status.textContent.trim()))) return;
    document.body.dataset.raceStopped = "1";
    if (status) {
      status.className = "status status-stopped";
      status.textContent = "Stopped.";
    }
  }, true);


  // The race's "why?" (view/race_status.py): on a projector and a phone the why, its notes and the
  // "Ran:" line fold under the one-line headline; the button opens and closes them.
  document.addEventListener("click", (event) => {
    const b = event.target.closest ? event.target.closest(".why-toggle") : null;
    const summary = b && b.closest("#race-summary");
    if (!summary) return;
    const open = summary.classList.toggle("why-open");
    b.setAttribute("aria-expanded", String(open));
    b.textContent = open ? "hide why" : "why?";
  });

  // The round timeline (view/timeline.py): every block is placed by its start and length in seconds;
  // the axis' length --T grows by steps (so blocks do not shift on every update) to cover the latest
  // block's end, with tick labels in seconds.
  const niceStep = (T) => { const raw = T / 5, e = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / e;
                            return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e; };
  const drawAxis = (box, T, T0 = 0) => {
    const axis = box.querySelector(".tl-axis");
    if (!axis) return;
    const step = niceStep(T), ticks = [];
    for (let x = 0; x <= T + 1e-9; x += step) {
      const at = T0 + x;       // a page of rounds starts its axis at its own first second
      const tick = node("span", "tl-tick", (step < 0.1 ? at.toFixed(2) : step < 1 ? at.toFixed(1) : at.toFixed(0)) + " s");
      tick.style.left = (100 * x / T) + "%";
      ticks.push(tick);
    }
    axis.replaceChildren(...ticks);
  };
  const fitTimeline = (box, whole) => {
    let end = 0;
    // After an append only the newest blocks can end later than the axis: the last few, read from the
    // end; after a whole new content (a new race, a replay), every block.
    let el = box.lastElementChild;
    for (let i = 0; el && (whole || i < 8); i++, el = el.previousElementSibling) end = Math.max(end, Number(el.dataset.end || 0));
    const T = whole ? 0 : Number(box.dataset.span || 0);
    if (T && end <= T) return;
    const next = Math.max(end * 1.25, 0.1);
    box.dataset.span = String(next);
    box.style.setProperty("--T", String(next));
    drawAxis(box, next);
  };
  // A long race's timeline pages by rounds: past PAGE_ROUNDS rounds (a 96-token race draws about fifty
  // slivers, unreadable on a projector) a pager under it shows PAGE_ROUNDS rounds at a time on an axis of
  // their own, with the plain lane's passes of the same seconds; "all" draws the whole race again. The
  // page chosen holds while the race grows; a new race starts with the whole.
  const PAGE_ROUNDS = 12;
  const startOf = (el) => Number(el.style.getPropertyValue("--t") || 0);
  const pageCount = (box) => Math.ceil(box.querySelectorAll(".tl-verify").length / PAGE_ROUNDS);
  const showPage = (box) => {
    const rounds = [...box.querySelectorAll(".tl-verify")];
    const page = box.dataset.page === undefined ? -1 : Number(box.dataset.page);
    const blocks = box.querySelectorAll(".tl-b, .tl-fates");
    if (page < 0 || !rounds.length) {
      blocks.forEach((el) => el.classList.remove("tl-off"));
      box.style.setProperty("--T0", "0");
      return false;
    }
    const first = page * PAGE_ROUNDS, last = Math.min(rounds.length, first + PAGE_ROUNDS) - 1;
    const t0 = first > 0 ? Number(rounds[first - 1].dataset.end) : 0, t1 = Number(rounds[last].dataset.end);
    const eps = 1e-6;
    blocks.forEach((el) => el.classList.toggle("tl-off", startOf(el) < t0 - eps || Number(el.dataset.end) > t1 + eps));
    const T = Math.max(t1 - t0, 1e-3) * 1.02;
    box.style.setProperty("--T0", String(t0));
    box.style.setProperty("--T", String(T));
    drawAxis(box, T, t0);
    return true;
  };
  const pagerOf = (box) => {
    const holder = box.parentElement;
    let pager = holder && holder.querySelector(":scope > .tl-pager");
    if (!pager && holder) {
      pager = node("div", "tl-pager");
      const go = (what, text, label) => { const b = node("button", "tl-go", text); b.type = "button"; b.dataset.go = what; b.setAttribute("aria-label", label); return b; };
      pager.append(go("prev", "◀ earlier", "Earlier rounds"), node("span", "tl-page-label"),
                   go("next", "later ▶", "Later rounds"), go("all", "all rounds", "The whole race"));
      holder.append(pager);
    }
    return pager;
  };
  const updatePager = (box) => {
    const n = box.querySelectorAll(".tl-verify").length, pages = pageCount(box);
    const pager = n > PAGE_ROUNDS ? pagerOf(box) : box.parentElement && box.parentElement.querySelector(":scope > .tl-pager");
    if (!pager) return;
    pager.hidden = n <= PAGE_ROUNDS;
    const page = box.dataset.page === undefined ? -1 : Number(box.dataset.page);
    pager.querySelector(".tl-page-label").textContent = page < 0 ? `all ${n} rounds`
      : `rounds ${page * PAGE_ROUNDS + 1}–${Math.min(n, (page + 1) * PAGE_ROUNDS)} of ${n}`;
    pager.querySelector('[data-go="prev"]').disabled = page === 0;
    pager.querySelector('[data-go="next"]').disabled = page === pages - 1;
    pager.querySelector('[data-go="all"]').disabled = page < 0;
  };
  document.addEventListener("click", (event) => {
    const b = event.target.closest ? event.target.closest(".tl-pager .tl-go") : null;
    const box = b && b.closest(".tl-pager").parentElement.querySelector(".live-box");
    if (!box) return;
    const pages = pageCount(box), page = box.dataset.page === undefined ? -1 : Number(box.dataset.page);
    const next = b.dataset.go === "all" ? -1 : b.dataset.go === "prev" ? (page < 0 ? pages - 1 : page - 1)
      : (page < 0 ? 0 : page + 1);
    if (next < 0) delete box.dataset.page; else box.dataset.page = String(Math.min(Math.max(next, 0), pages - 1));
    if (!showPage(box)) fitTimeline(box, true);
    updatePager(box);
  });
  document.addEventListener("live-grew", (event) => {
    const box = event.target;
    if (!box.closest || !box.closest("#timeline, #step-timeline")) return;
    const whole = !box.querySelector(".tl-tick");     // a new race, a replay: drawn whole, from its first round
    if (whole) delete box.dataset.page;
    if (!box.querySelector(".tl-b")) { delete box.dataset.span; updatePager(box); return; }
    if (!showPage(box)) fitTimeline(box, whole);
    updatePager(box);
  });

  // The Explain tab's toy (#pq-toy): a fixed target p over five tokens and a draft q the student sets with
  // sliders (q renormalised as one moves). It shows the chance a draft is kept, sum min(p, q), and for each
  // token what comes out: kept drafts, q(x) min(1, p(x)/q(x)) = min(p, q), plus corrections,
  // (1 - sum min(p, q)) norm(max(0, p - q))(x) = max(0, p - q): together exactly p(x), whatever q is.
  const TOY_P = [0.40, 0.25, 0.15, 0.12, 0.08];
  const TOY_TOKENS = ["the", "a", "this", "one", "my"];
  const buildToy = () => {
    const host = document.querySelector("#pq-toy");
    if (!host || host.dataset.built) return;
    host.dataset.built = "1";
    let q = [0.10, 0.45, 0.15, 0.05, 0.25];
    const box = node("div", "toy");
    const head = node("div", "toy-head");
    const rows = TOY_TOKENS.map((tok, i) => {
      const row = node("div", "toy-row");
      row.appendChild(node("span", "pic-tok", tok));
      const slider = node("input", "toy-q");
      slider.type = "range"; slider.min = "0"; slider.max = "1"; slider.step = "0.01";
      slider.setAttribute("aria-label", "q (draft) of '" + tok + "'");
      slider.addEventListener("input", () => {
        // Set q(tok), then scale the others so q still sums to 1.
        const want = Math.min(0.99, Math.max(0.01, Number(slider.value)));
        const rest = q.reduce((s, x, j) => s + (j === i ? 0 : x), 0);
        q = q.map((x, j) => (j === i ? want : rest > 0 ? x * (1 - want) / rest : (1 - want) / (q.length - 1)));
        draw();
      });
      const bars = node("span", "toy-bars");
      const nums = node("span", "pic-num");
      row.append(slider, bars, nums);
      return { row, slider, bars, nums };
    });
    const foot = node("div", "pic-note");
    box.append(head, ...rows.map((r) => r.row), foot);
    host.appendChild(box);
    const scale = 1 / Math.max(...TOY_P);     // the likeliest token's p fills the bar
    const seg = (cls, width) => { const s = node("span", cls); s.style.width = (100 * width * scale) + "%"; return s; };
    const draw = () => {
      const overlap = TOY_P.reduce((s, p, i) => s + Math.min(p, q[i]), 0);
      head.textContent = "Chance a draft is kept: Σ min(p, q) = " + overlap.toFixed(2) +
        ". Drag q; p (the target) stays. Each bar: what comes out = kept drafts (green) + corrections (amber).";
      rows.forEach((r, i) => {
        const p = TOY_P[i], kept = Math.min(p, q[i]), fixed = Math.max(0, p - q[i]);
        r.slider.value = String(q[i]);
        r.bars.replaceChildren(seg("toy-kept", kept), seg("toy-fixed", fixed));
        r.bars.style.setProperty("--p", String(p * scale));
        r.nums.textContent = "q " + q[i].toFixed(2) + " · out " + kept.toFixed(2) + " + " + fixed.toFixed(2) +
                             " = " + (kept + fixed).toFixed(2) + " = p";
      });
      foot.textContent = "A draft x is kept with chance min(1, p(x)/q(x)); after a rejection the target draws from " +
        "max(0, p − q), which has mass " + (1 - overlap).toFixed(2) + ": exactly the part of p that q under-covers. " +
        "So the output is distributed as p for every q: only the speed depends on q.";
    };
    draw();
  };
  buildToy();
  setInterval(buildToy, 1000);

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

  // "use k = N" is hidden while the k slider already holds N (it offers nothing then), shown again
  // when the visitor moves k away; the server sets its N once the pair is measured.
  const syncUseK = () => {
    const button = document.querySelector("#use-k");
    const box = document.querySelector("#k input[type=number]");
    if (!button || !box) return;
    const m = button.textContent.match(/k = (\d+)/);
    button.classList.toggle("same-k", !!m && Number(m[1]) === Number(box.value));
  };
  document.addEventListener("input", syncUseK, true);
  document.addEventListener("change", syncUseK, true);
  setInterval(syncUseK, 1000);          // also after the server changes k or the button's N

  // A race's live feed (view/live_channel.py): the status line of a race the page started carries the
  // feed's address (data-live); its server-sent updates append to the panes and the timeline (each
  // box's liveFeed, view/live_html.py) and replace the meters and the strip. The race's last Gradio
  // update brings the whole panes whatever the feed delivered. Stop ends the reading at once.
  let feed = null, feedUrl = "";
  const readFeed = () => {
    const mark = document.querySelector("#status [data-live]");
    const url = mark ? mark.dataset.live : "";
    if (!url || url === feedUrl) return;
    feedUrl = url;
    if (feed) feed.close();
    const source = feed = new EventSource(url);
    const end = () => { source.close(); if (feed === source) feed = null; };
    source.addEventListener("end", end);
    source.onerror = end;            // never reconnect: a feed is read once, the race's end brings the rest
    source.onmessage = (event) => {
      if (document.body.dataset.raceStopped === "1") { end(); return; }
      let update;
      try { update = JSON.parse(event.data); } catch (e) { return; }
      for (const [id, [at, tail]] of Object.entries(update.append || {})) {
        const box = document.querySelector("#" + id + " .live-box");
        if (box && box.liveFeed) box.liveFeed(at, tail);
      }
      for (const [id, html] of Object.entries(update.replace || {})) {
        const box = document.querySelector("#" + id + " .live-box");
        if (box && box.liveFeed) { box.liveFeed(-1, html); continue; }
        const prose = document.querySelector("#" + id + " .prose");
        if (prose) prose.innerHTML = html;
      }
    };
  };
  const watchStatus = () => {
    const status = document.querySelector("#status");
    if (!status || status.dataset.feedWatch) return;
    status.dataset.feedWatch = "1";
    new MutationObserver(readFeed).observe(status, { childList: true, subtree: true });
    readFeed();
  };
  watchStatus();
  setInterval(watchStatus, 1000);

  // Step mode counts its own clicks (the keys below click too): the step event sends the count and
  // the server reveals rounds up to it (view/tabs/step.py), so no click is lost while one is answered.
  // At most one click in STEP_EVERY_MS reaches the server; those between wait and go as one (the count
  // says how many), so a burst of clicks never runs into the server's joins-per-second limit.
  const STEP_EVERY_MS = 400;
  let stepSent = -Infinity, stepLater = null, stepOwn = false;
  document.addEventListener("click", (event) => {
    const step = event.target.closest ? event.target.closest("#step") : null;
    if (!step || stepOwn) return;
    window.specvizStepClicks = (window.specvizStepClicks || 0) + 1;
    const wait = STEP_EVERY_MS - (performance.now() - stepSent);
    if (wait <= 0 && !stepLater) { stepSent = performance.now(); return; }      // on to Gradio's listener
    event.stopImmediatePropagation();
    event.preventDefault();
    if (!stepLater) stepLater = setTimeout(() => {
      stepLater = null;
      stepSent = performance.now();
      stepOwn = true;          // already counted
      try { step.click(); } finally { stepOwn = false; }
    }, Math.max(wait, 0));
  }, true);

  // Step mode from the keyboard: the right arrow or the space bar is "Next round" (not while typing).
  document.addEventListener("keydown", (event) => {
    if (event.target.closest && event.target.closest("input, textarea, select, button, [contenteditable], [data-tip]")) return;
    if (event.key !== "ArrowRight" && event.key !== " ") return;
    const step = document.querySelector("#step");
    if (!step || step.offsetParent === null) return;      // the step tab is not showing
    event.preventDefault();
    step.click();
  });

  // Load a trace (the race tab): the file input lives in the page (no Gradio upload, which the server
  // refuses); picking a file presses the race tab's hidden trigger, whose own script reads the file
  // (at most a byte past the server's limit, so an oversized file is refused there in one line) and
  // sends its text for view/replay.py to replay.
  document.addEventListener("change", (event) => {
    if (!event.target || event.target.id !== "trace-file" || !event.target.files.length) return;
    const go = document.querySelector("#trace-load-go");
    if (go) go.click();
  });
}
