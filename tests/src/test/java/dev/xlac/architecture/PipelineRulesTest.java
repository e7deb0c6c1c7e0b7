package dev.xlac.architecture;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.pipeline.archfixture.AsksXlacRun;
import dev.xlac.pipeline.archfixture.LoopA;
import dev.xlac.pipeline.archfixture.LoopB;
import dev.xlac.pipeline.recording.archfixture.RecordsFromTheTrace;
import dev.xlac.pipeline.run.archfixture.ReadsDumps;
import dev.xlac.pipeline.run.archfixture.RunsACompile;
import dev.xlac.pipeline.sources.archfixture.ServesTheCommand;
import dev.xlac.pipeline.sources.archfixture.StartsACompile;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The pipeline's rooms: the compile run ({@code dev.xlac.pipeline}) with its Slurm engine ({@code .slurm}), the graph
 * sources it reads ({@code .sources}: paths, a traced command), {@code xlac run} ({@code .run}), recording through the
 * runtime proxy, which the sources and {@code xlac run} share ({@code .recording}), and the explanations
 * ({@code .explain}). The sources use no run; {@code xlac run} uses neither the compile run nor the sources, and no
 * other room uses it; recording uses no other room; and no two classes of the pipeline use each other (a two-file
 * loop: each would have to be read with the other).
 */
class PipelineRulesTest {
  static final ArchRule XLAC_RUN_STANDS_APART = noClasses().that().resideInAPackage("dev.xlac.pipeline.run..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.pipeline", "dev.xlac.pipeline.slurm..",
          "dev.xlac.pipeline.shard..", "dev.xlac.pipeline.ray..", "dev.xlac.pipeline.sources..")
      .because("xlac run serves a training command; the compile runs, their engines and sources are other rooms");

  static final ArchRule SOURCES_FEED_NO_RUN = noClasses().that().resideInAPackage("dev.xlac.pipeline.sources..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.pipeline", "dev.xlac.pipeline.slurm..",
          "dev.xlac.pipeline.shard..", "dev.xlac.pipeline.ray..", "dev.xlac.pipeline.run..")
      .because("the compile run reads its graphs from the sources; a source that knew a run would close a circle");

  static final ArchRule ONLY_XLAC_RUN_NAMES_ITSELF = noClasses().that().resideInAPackage("dev.xlac.pipeline..")
      .and().resideOutsideOfPackage("dev.xlac.pipeline.run..")
      .should().dependOnClassesThat().resideInAPackage("dev.xlac.pipeline.run..")
      .because("what the compile side shares with xlac run (recording through the proxy) lives below both");

  static final ArchRule RECORDING_LIES_LOWER = noClasses().that().resideInAPackage("dev.xlac.pipeline.recording..")
      .should().dependOnClassesThat(resideInAPackage("dev.xlac.pipeline..")
          .and(resideOutsideOfPackage("dev.xlac.pipeline.recording..")))
      .because("recording through the proxy serves the sources and xlac run alike, so it uses neither");

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void xlacRun_usesNoCompileRunAndNoSource() {
    assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac.pipeline.run"))).hasSizeGreaterThan(5);
    XLAC_RUN_STANDS_APART.check(product);
    assertCaught(XLAC_RUN_STANDS_APART, RunsACompile.class);
    assertCaught(XLAC_RUN_STANDS_APART, ReadsDumps.class);
  }

  @Test
  void theSources_useNoRun() {
    assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac.pipeline.sources")))
        .hasSizeGreaterThan(5);
    SOURCES_FEED_NO_RUN.check(product);
    assertCaught(SOURCES_FEED_NO_RUN, StartsACompile.class);
    assertCaught(SOURCES_FEED_NO_RUN, ServesTheCommand.class);
  }

  @Test
  void noOtherRoom_usesXlacRun() {
    ONLY_XLAC_RUN_NAMES_ITSELF.check(product);
    assertCaught(ONLY_XLAC_RUN_NAMES_ITSELF, AsksXlacRun.class);
  }

  @Test
  void recording_usesNoOtherRoom() {
    assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac.pipeline.recording")))
        .hasSizeGreaterThan(4);
    RECORDING_LIES_LOWER.check(product);
    assertCaught(RECORDING_LIES_LOWER, RecordsFromTheTrace.class);
  }

  /** The rule reports {@code fixture}, which breaks it: so the rule is known to catch what it names. */
  private static void assertCaught(ArchRule rule, Class<?> fixture) {
    assertThatThrownBy(() -> rule.check(new ClassFileImporter().importClasses(fixture)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(fixture.getName());
  }

  @Test
  void noTwoPipelineClasses_useEachOther() {
    assertThat(twoFileLoops(product)).isEmpty();
    assertThat(twoFileLoops(new ClassFileImporter().importClasses(LoopA.class, LoopB.class)))
        .as("a loop the check must see").containsExactly(LoopA.class.getName() + " <-> " + LoopB.class.getName());
  }

  /** Pairs of top-level classes under dev.xlac.pipeline each of which uses the other. */
  static List<String> twoFileLoops(JavaClasses classes) {
    Set<String> loops = new TreeSet<>();
    for (JavaClass a : classes) {
      String top = topLevel(a);
      if (!inScope(top)) {
        continue;
      }
      for (Dependency d : a.getDirectDependenciesFromSelf()) {
        String other = topLevel(d.getTargetClass());
        if (inScope(other) && !other.equals(top) && uses(classes, other, top)) {
          loops.add(top.compareTo(other) < 0 ? top + " <-> " + other : other + " <-> " + top);
        }
      }
    }
    return new ArrayList<>(loops);
  }

  private static boolean inScope(String name) {
    return name.startsWith("dev.xlac.pipeline.");
  }

  private static boolean uses(JavaClasses classes, String from, String to) {
    return classes.stream().filter(c -> topLevel(c).equals(from)).flatMap(c -> c.getDirectDependenciesFromSelf()
        .stream()).anyMatch(d -> topLevel(d.getTargetClass()).equals(to));
  }

  private static String topLevel(JavaClass c) {
    JavaClass t = c;
    while (t.getEnclosingClass().isPresent()) {
      t = t.getEnclosingClass().get();
    }
    return t.getName();
  }
}
