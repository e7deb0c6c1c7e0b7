package dev.xlac.cli.cache;

import dev.xlac.cache.CacheStore;
import dev.xlac.core.Json;
import dev.xlac.pipeline.explain.WhyMissed;
import dev.xlac.pipeline.explain.WhyNew;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "why", mixinStandardHelpOptions = true,
    description = {"Say why one graph, or one recorded request, of the cache is not a cache hit for the others: its"
        + " nearest relative and what differs.",
        "Given a request key (pjrt1:HEX, as xlac run --report names its misses), it says of that recorded request"
            + " what xlac run says of each miss: recorded for another plugin or machine (the identity lines that"
            + " differ), with other compile options (the fields that differ), a program that changed (against the"
            + " nearest recorded request of its module), or not recorded.",
        "The relatives are the other graphs of the same module name (those first seen before it first, then the most"
            + " recently seen; at most 8 are compared, by the structural diff of 'xlac diff'), or, when none of those"
            + " matches, graphs of like structure under other names. The nearest is the one"
            + " with the fewest changes; the reason names what differs in a few words: batch size (32 -> 48),"
            + " sequence length, dtype (f32 -> bf16), a constant (1.5 -> 2.5), N added or removed instructions, else"
            + " the diff's verdict; 'no relative' when no graph is close enough. xlac dump and one-shot"
            + " parallel-compile print the same, grouped, for every new graph of a run."},
    footer = {"%nText: the graph, the reason, the relative and the diff's verdict (xlac diff RELATIVE GRAPH shows"
        + " the details). With --json, one object with the keys graph, module, reason, only, relative,"
        + " relative_module, verdict and compared.",
        "%nFor a request key: the request, the reason, the nearest recorded request and (HLO programs) the diff's"
            + " verdict against it; StableHLO programs are not compared in detail. With --json, one object with"
            + " the keys key, module, count, reason, text, identity_lines, option_fields, program_change, verdict and"
            + " nearest.",
        "%nExit codes: 0 (with or without a relative), 2 not a fingerprint or request key, no such graph or request,"
            + " an ambiguous prefix or a damaged entry, 3 cache unusable."})
final class CacheWhyCommand implements Callable<Integer> {
  @Parameters(paramLabel = "FINGERPRINT|KEY", description = "A fingerprint, or a unique prefix of at least 6 hex"
      + " digits; or a request key, pjrt1:HEX.")
  String fingerprint;

  @Option(names = "--json", description = "Print a JSON object instead of text.")
  boolean json;

  @Mixin
  CacheOptions cache;

  @Override
  public Integer call() throws InterruptedException {
    if (WhyMissed.namesRequest(fingerprint)) {
      return request();
    }
    WhyNew.Reason r;
    try (CacheStore store = cache.openReadOnly()) {
      r = WhyNew.explainOne(store, fingerprint);
    }
    PrintWriter out = cache.out();
    if (json) {
      out.println(Json.write(r.toJson()));
      out.flush();
      return 0;
    }
    out.printf("graph:     %s (%s)%n", r.graph().value(), r.module());
    if (r.relative() == null) {
      out.printf("why new:   no relative (no other readable graph in the cache is named %s, and none under"
          + " another name has a like structure)%n", r.module());
    } else {
      out.printf("why new:   differs from its nearest relative%s%n", r.againstRelative());
      out.printf("relative:  %s (%s; %d compared)%n", r.relative().value(), r.relativeModule(), r.compared());
      out.printf("verdict:   %s%n", r.verdict());
    }
    out.flush();
    return 0;
  }

  private int request() throws InterruptedException {
    WhyMissed.Reason r;
    try (CacheStore store = cache.openReadOnly()) {
      r = WhyMissed.explainOne(store, fingerprint);
    }
    PrintWriter out = cache.out();
    if (json) {
      out.println(Json.write(r.toJson()));
    } else {
      out.printf("request:   %s (%s)%n", r.key().text(), r.module().isEmpty() ? "no module name" : r.module());
      out.printf("why:       %s%n", r.kind() == WhyMissed.Kind.NOT_RECORDED
          ? "no other recorded request has its program or its module" : r.text());
      if (r.nearest() != null) {
        out.printf("nearest:   %s%n", r.nearest().text());
      }
      if (r.verdict() != null) {
        out.printf("verdict:   %s%n", r.verdict());
      }
    }
    out.flush();
    return 0;
  }
}
