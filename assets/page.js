() => {
  // Token panes scroll inside their box and follow the newest token, unless the reader has
  // scrolled up (then they stay put until the reader scrolls back to the bottom).
  const FOLLOW_PX = 40;
  const watch = (pane) => {
    if (pane.dataset.follow) return;
    pane.dataset.follow = "1";
    pane.addEventListener("scroll", () => {
      pane.dataset.follow = pane.scrollHeight - pane.scrollTop - pane.clientHeight < FOLLOW_PX ? "1" : "0";
    });
    new MutationObserver(() => {
      if (pane.scrollHeight <= pane.clientHeight + FOLLOW_PX) pane.dataset.follow = "1";  // a new run
      if (pane.dataset.follow === "1") pane.scrollTop = pane.scrollHeight;
    }).observe(pane, { childList: true, subtree: true, characterData: true });
  };
  const scan = () => document.querySelectorAll(".token-pane").forEach(watch);
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
