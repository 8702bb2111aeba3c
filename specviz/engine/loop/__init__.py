"""The decoding loop: settings, events, sampling, the acceptance rules, drafters, the speculative
and plain lanes and the race that interleaves them. Builds on runtime/ (models and clocks) and
metrics/ (the tally each lane folds its events into)."""
