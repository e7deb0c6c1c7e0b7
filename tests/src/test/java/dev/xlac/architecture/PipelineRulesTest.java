package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.pipeline.archfixture.LoopA;
import dev.xlac.pipeline.archfixture.LoopB;
import dev.xlac.pipeline.run.archfixture.RunsACompile;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The pipeline's rooms: the runs ({@code dev.xlac.pipeline}), {@code xlac run} ({@code .run}), the Slurm engine
 * ({@code .slurm}) and the explanations ({@code .explain}). {@code xlac run} uses neither the compile runs nor an
 * engine (only the explanations); and no two classes of the pipeline use each other (a two-file loop: each would
 * have to be read with the other).
 */
class PipelineRulesTest {
  static final ArchRule XLAC_RUN_STANDS_APART = noClasses().that().resideInAPackage("dev.xlac.pipeline.run..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.pipeline", "dev.xlac.pipeline.slurm..",
          "dev.xlac.pipeline.shard..", "dev.xlac.pipeline.ray..")
      .because("xlac run serves a training command; the compile runs and their engines are another room");

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void xlacRun_usesNoCompileRun() {
    assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac.pipeline.run"))).hasSizeGreaterThan(5);
    XLAC_RUN_STANDS_APART.check(product);
    assertThatThrownBy(() -> XLAC_RUN_STANDS_APART.check(new ClassFileImporter().importClasses(RunsACompile.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(RunsACompile.class.getName());
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
