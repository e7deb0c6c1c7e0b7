package dev.xlac.faults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** What one scenario ran and found: trials, outcome counts, entries checked, and every failure. */
final class Tally {
  final String scenario;
  int trials;
  long entriesChecked;
  long entriesLost;
  long wrongBytes;
  final Map<String, Integer> outcomes = new TreeMap<>();
  final List<String> failures = new ArrayList<>();
  final List<String> notes = new ArrayList<>();
  String skipped;
  long millis;

  Tally(String scenario) {
    this.scenario = scenario;
  }

  void outcome(String what) {
    outcomes.merge(what, 1, Integer::sum);
  }

  void fail(int trial, String what) {
    failures.add((trial > 0 ? "trial " + trial + ": " : "") + what);
  }

  void note(String what) {
    if (!notes.contains(what)) {
      notes.add(what);
    }
  }

  boolean passed() {
    return failures.isEmpty();
  }

  /**
   * Compares a cache's content after a fault with what it held before. Bytes that changed are
   * always a failure; entries that vanished are one unless {@code lossAllowed}.
   *
   * @return whether nothing was wrong
   */
  boolean compare(int trial, String when, Content before, Content after, boolean lossAllowed) {
    entriesChecked += before.entries().size();
    boolean good = true;
    List<String> changed = before.changedIn(after);
    if (!changed.isEmpty()) {
      wrongBytes += changed.size();
      fail(trial, when + ": WRONG BYTES: " + changed.size() + " entries hold other bytes than were stored: "
          + String.join(", ", changed.subList(0, Math.min(5, changed.size()))));
      good = false;
    }
    var missing = before.missingFrom(after);
    if (!missing.isEmpty() && !lossAllowed) {
      entriesLost += missing.size();
      fail(trial, when + ": LOST " + missing.size() + " entries that a finished command had stored: "
          + before.describe(missing, 5));
      good = false;
    }
    return good;
  }
}
