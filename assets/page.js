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

  // Step mode from the keyboard: the right arrow or the space bar is "Next round" (not while typing).
  document.addEventListener("keydown", (event) => {
    if (event.target.closest && event.target.closest("input, textarea, select, button, [contenteditable]")) return;
    if (event.key !== "ArrowRight" && event.key !== " ") return;
    const step = document.querySelector("#step");
    if (!step || step.offsetParent === null) return;      // the step tab is not showing
    event.preventDefault();
    step.click();
  });
}
