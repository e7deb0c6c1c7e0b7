package dev.xlac.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import dev.xlac.compiler.schedule.GraphResult;
import dev.xlac.core.FailureKind;
import dev.xlac.core.Json;
import dev.xlac.hlo.GraphFingerprint;
import dev.xlac.pipeline.explain.WhyNew;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

class RunReportTest {
  private static GraphFingerprint fp(int n) {
    return new GraphFingerprint("hlo1:" + String.format("%064x", n));
  }

  private static final RunReport REPORT = new RunReport(List.of(
      new GraphResult(fp(1), "jit_step", GraphResult.Status.COMPILED, Duration.ofMillis(1500), 1, null, null),
      GraphResult.cached(fp(2), "jit_cached"),
      new GraphResult(fp(3), "jit_<bad>&\"q\"", GraphResult.Status.FAILED, Duration.ofMillis(500), 2,
          FailureKind.CRASH, "jit_<bad> (x): died with SIGABRT \u0001 & <more>"),
      GraphResult.previouslyFailed(fp(4), "jit_old", "compile-error", "rejected\nby the plugin")),
      Duration.ofSeconds(1), 2);

  @Test
  void counts_speedup_andExitCode() {
    assertThat(REPORT.total()).isEqualTo(4);
    assertThat(REPORT.compiled()).isEqualTo(1);
    assertThat(REPORT.cached()).isEqualTo(1);
    assertThat(REPORT.failed()).isEqualTo(2);
    assertThat(REPORT.speedup()).isEqualTo(2.0);
    assertThat(REPORT.exitCode().code()).isEqualTo(1);
    assertThat(new RunReport(List.of(GraphResult.cached(fp(2), "jit_cached")), Duration.ZERO, 1).exitCode().code())
        .isZero();
  }

  @Test
  void exitCode_aCompilerThatCouldNotRun_isThree_evenBesideACompileError() {
    // Moved here with RunReport from CompileSchedulerTest, which asserted 1 and 3 on real runs.
    GraphResult notRun = new GraphResult(fp(5), "jit_a", GraphResult.Status.NOT_RUN, Duration.ZERO, 0,
        FailureKind.ENVIRONMENT, "the compiler is pjrt something else instead of pjrt");
    GraphResult rejected = new GraphResult(fp(6), "jit_b", GraphResult.Status.FAILED, Duration.ZERO, 1,
        FailureKind.COMPILE_ERROR, "rejected");
    assertThat(new RunReport(List.of(rejected, notRun), Duration.ZERO, 1).exitCode().code()).isEqualTo(3);
    assertThat(new RunReport(List.of(rejected), Duration.ZERO, 1).exitCode().code()).isEqualTo(1);
  }

  @Test
  void summary_namesEachFailuresLog_andSaysEarlierFailuresWereSkipped() {
    List<String> lines = REPORT.summaryLines();
    assertThat(lines.getFirst()).isEqualTo("4 graphs: 1 compiled, 1 cached, 2 failed (1 failed in an earlier run"
        + " and was skipped; --retry-failed compiles them again)");
    assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("  failed: jit_<bad>&\"q\" (")
        .endsWith("; log: xlac cache log " + fp(3).value()));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("jit_old").contains("rejected by the plugin"));
    assertThat(lines.getLast()).isEqualTo("wall 1.00 s, compile time 2.00 s, effective parallel speedup 2.00x (2 jobs)");
  }

  @Test
  void json_hasTheDocumentedKeys() {
    Map<String, Object> json = REPORT.toJson();
    assertThat(json).containsKeys("total", "compiled", "cached", "failed", "wall_seconds", "graphs");
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> graphs = (List<Map<String, Object>>) json.get("graphs");
    assertThat(graphs.get(0)).containsEntry("status", "compiled").containsEntry("compile_seconds", 1.5)
        .containsEntry("error", null).containsEntry("module", "jit_step").containsEntry("fingerprint", fp(1).value());
    assertThat(graphs.get(1)).containsEntry("status", "cached");
    assertThat(graphs.get(2)).containsEntry("status", "failed").containsEntry("failure_kind", "crash");
    assertThat(graphs.get(3)).containsEntry("status", "failed").containsEntry("failure_kind", "earlier-failure");
    assertThat(Json.write(json)).contains("\"wall_seconds\": 1.0");
  }

  @Test
  void json_carriesWhyEachNewGraphWasNew_andNullForTheOthers() {
    WhyNew.Reason batch = new WhyNew.Reason(fp(1), "jit_step", fp(7), "jit_step", "entry parameter 0: ...",
        "batch size", "32 -> 48", true, 1);
    WhyNew.Reason none = new WhyNew.Reason(fp(3), "jit_<bad>&\"q\"", null, null, null, "no relative", null, false, 0);
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> graphs = (List<Map<String, Object>>) REPORT
        .withReasons(new WhyNew.Summary(List.of(batch, none), 1)).toJson().get("graphs");
    assertThat(graphs.get(0)).containsEntry("reason", "batch size (32 -> 48)").containsEntry("relative", fp(7).value());
    assertThat(graphs.get(1)).containsEntry("reason", null).containsEntry("relative", null);
    assertThat(graphs.get(2)).containsEntry("reason", "no relative").containsEntry("relative", null);
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> plain = (List<Map<String, Object>>) REPORT.toJson().get("graphs");
    assertThat(plain).allSatisfy(g -> assertThat(g).containsEntry("reason", null));
  }

  @Test
  void junit_parses_withEscapedTextAndOneTestcasePerGraph() throws Exception {
    String xml = REPORT.toJunitXml();
    Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder()
        .parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));

    Element suite = doc.getDocumentElement();
    assertThat(suite.getAttribute("tests")).isEqualTo("4");
    assertThat(suite.getAttribute("failures")).isEqualTo("2");
    assertThat(suite.getElementsByTagName("testcase").getLength()).isEqualTo(4);
    Element failure = (Element) suite.getElementsByTagName("failure").item(0);
    assertThat(failure.getAttribute("message")).isEqualTo("jit_<bad> (x): died with SIGABRT ? & <more>");
    assertThat(failure.getAttribute("type")).isEqualTo("crash");
    Element testcase = (Element) failure.getParentNode();
    assertThat(testcase.getAttribute("name")).startsWith("jit_<bad>&\"q\" (");
  }
}
