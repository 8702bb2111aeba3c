"""Measuring and explaining runs: folds over events for the page (stats), the time ledger and its
verdict, what a round costs on this machine (calibrate), the lossless check, acceptance by kind of
token and the words for each event. Reads the loop's events and runs it; the loop never imports it."""
