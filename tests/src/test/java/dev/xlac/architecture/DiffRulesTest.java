package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.hlo.GraphDiff;
import dev.xlac.hlo.HloShapes;
import dev.xlac.pipeline.archfixture.DescribesShapes;
import dev.xlac.pipeline.explain.archfixture.ExplainsFromTheRun;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * How two graphs differ is worded in {@code hlo} ({@code DiffReason}, beside {@code GraphDiff}); the pipeline
 * looks graphs up, groups and reports. So no pipeline class reads a diff's parts (its sides and their shapes, its
 * match, its parameter, dimension, element type and constant changes: {@code DiffReason} and
 * {@code NearestRelative} do), shapes as text ({@code HloShapes}) or the HLO schema's classes. Why a graph is new,
 * why a request missed and what two graphs differ by is the pipeline's {@code explain} package, which the runs use
 * and which uses none of them.
 */
class DiffRulesTest {
  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  /** GraphDiff's nested types: its sides, its match, the changes it lists. */
  private static final DescribedPredicate<JavaClass> PARTS_OF_A_DIFF = DescribedPredicate.describe(
      "are the parts of a GraphDiff", c -> c.getEnclosingClass().map(e -> e.isEquivalentTo(GraphDiff.class))
          .orElse(false));

  /** The rule, also checked against a fixture below so that it is known to catch what it names. */
  static ArchRule noDiffWordingInPipeline() {
    return noClasses().that().resideInAPackage("dev.xlac.pipeline..")
        .should().dependOnClassesThat(PARTS_OF_A_DIFF)
        .orShould().dependOnClassesThat().belongToAnyOf(HloShapes.class)
        .orShould().dependOnClassesThat().resideInAPackage("dev.xlac.hlo.proto..")
        .because("a diff is worded in hlo (DiffReason); the pipeline only looks up, groups and reports");
  }

  /** The explaining package stands alone in the pipeline: the runs use it, never the other way. */
  static final ArchRule EXPLAINING_USES_NO_RUN = noClasses().that().resideInAPackage("dev.xlac.pipeline.explain..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.pipeline", "dev.xlac.pipeline.slurm..")
      .because("the runs hand explain what to explain; a dependency back would make a package circle");

  @Test
  void explaining_usesNoRun() {
    EXPLAINING_USES_NO_RUN.check(product);
    assertThatThrownBy(() -> EXPLAINING_USES_NO_RUN.check(new ClassFileImporter().importClasses(
        ExplainsFromTheRun.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(ExplainsFromTheRun.class.getName());
  }

  @Test
  void theImport_seesThePipelineAndTheDiff() {
    assertThat(product.stream().filter(c -> c.getPackageName().startsWith("dev.xlac.pipeline"))).hasSizeGreaterThan(10);
    assertThat(product.stream().filter(PARTS_OF_A_DIFF::test)).as("GraphDiff's nested records").hasSizeGreaterThan(5);
  }

  @Test
  void pipeline_wordsNoDiff() {
    noDiffWordingInPipeline().check(product);
  }

  @Test
  void diffWordingInPipeline_isReported() {
    assertThatThrownBy(() -> noDiffWordingInPipeline().check(new ClassFileImporter().importClasses(
        DescribesShapes.class, GraphDiff.class, GraphDiff.DimChange.class)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(DescribesShapes.class.getName())
        .hasMessageContaining(GraphDiff.DimChange.class.getName());
  }
}
