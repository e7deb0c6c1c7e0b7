package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RunPins;
import dev.xlac.cache.bundle.archfixture.CircleBack;
import dev.xlac.cache.layout.archfixture.ReachesPast;
import dev.xlac.cache.ops.archfixture.CircleOut;
import dev.xlac.cache.ops.archfixture.TalksToS3;
import dev.xlac.cache.remote.RemoteTier;
import dev.xlac.cache.remote.archfixture.ReachesTheStore;
import dev.xlac.cache.repair.CacheVerifier;
import dev.xlac.cache.store.Store;
import dev.xlac.cache.store.archfixture.CallsRepair;
import dev.xlac.cache.store.archfixture.CallsUp;
import dev.xlac.pipeline.archfixture.OpensTheRemoteTierItself;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The cache's own layering, on the compiled main classes: the facade {@code dev.xlac.cache} (with the
 * public value types) over {@code ops}, {@code bundle}, {@code layout} and {@code repair} (salvage, verify, swap),
 * all over {@code store}, the one package that holds RocksDB. Nothing outside the cache reaches past the facade or
 * into the remote tier's S3 side (both tiers have one door), the store never calls back up (the size limit is a hook
 * the facade installs), and the cache's packages form no circle.
 */
class CacheRulesTest {
  private static final String[] CACHE_INTERNALS = {"dev.xlac.cache.store..", "dev.xlac.cache.ops..",
      "dev.xlac.cache.bundle..", "dev.xlac.cache.repair.."};

  static final ArchRule NOTHING_OUTSIDE_USES_INTERNALS = noClasses().that().resideOutsideOfPackage("dev.xlac.cache..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("other modules use the cache through CacheStore and its public value types");

  static final ArchRule ONE_DOOR_FOR_BOTH_TIERS = noClasses().that().resideOutsideOfPackage("dev.xlac.cache..")
      .should().dependOnClassesThat().resideInAPackage("dev.xlac.cache.remote..")
      .because("the local and the remote tier are joined in one place: a run looks up and stores through"
          + " TieredCache (local, then the remote pulled through, then write-through), the remote alone is opened as"
          + " a CacheRemote; the S3 client, its sessions and the object layout stay inside the cache");

  static final ArchRule STORE_DOES_NOT_CALL_UP = noClasses().that().resideInAPackage("dev.xlac.cache.store..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.cache.ops..", "dev.xlac.cache.bundle..",
          "dev.xlac.cache.layout..", "dev.xlac.cache.remote..")
      .orShould().dependOnClassesThat().belongToAnyOf(CacheStore.class, RunPins.class, CacheRepair.class)
      .because("the store is the bottom of the cache: the facade, ops, bundles and layouts use it, never the other"
          + " way (it may use the root package's value types, records and exceptions)");

  static final ArchRule STORE_DOES_NOT_USE_REPAIR = noClasses().that().resideInAPackage("dev.xlac.cache.store..")
      .should().dependOnClassesThat().resideInAPackage("dev.xlac.cache.repair..")
      .because("salvage, verify and swap are built on the engine: the repair package uses the store, never the other"
          + " way");

  static final ArchRule NO_CYCLES_BETWEEN_CACHE_PACKAGES = slices().matching("dev.xlac.cache.(*)..")
      .should().beFreeOfCycles()
      .because("the cache's packages are layers (store at the bottom; repair, ops, bundle, layout and remote above"
          + " it): a circle between two of them means a piece lives in the wrong one");

  static final ArchRule NO_CLASS_CIRCLE_ACROSS_CACHE_PACKAGES = classes().that().resideInAPackage("dev.xlac.cache..")
      .should(new NotInACircleAcrossPackages())
      .because("a circle of classes through the root package (a facade type and the package it calls) is one the"
          + " package rule cannot see: the piece both sides need belongs below them both");

  static final ArchRule LAYOUTS_USE_THE_FACADE = noClasses().that().resideInAPackage("dev.xlac.cache.layout..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("a runtime layout reads and writes the cache through CacheStore, like any other user, so it gets the"
          + " facade's size limit, pins and damage reports");

  static final ArchRule REMOTE_USES_THE_FACADE = noClasses().that().resideInAPackage("dev.xlac.cache.remote..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("the remote tier reads and writes the cache through CacheStore, like any other user, so what it stores"
          + " gets the facade's checks, pins and size limit");

  static final ArchRule ONLY_REMOTE_TOUCHES_S3 = noClasses().that().resideOutsideOfPackage("dev.xlac.cache.remote..")
      .should().dependOnClassesThat().resideInAPackage("software.amazon.awssdk..")
      .because("the S3 client, its requests and exceptions stay inside the remote tier, which owns the one client");

  static final ArchRule ONLY_STORE_TOUCHES_ROCKSDB = noClasses().that().resideOutsideOfPackage("dev.xlac.cache.store..")
      .should().dependOnClassesThat().resideInAPackage("org.rocksdb..")
      .because("RocksDB, its batches and iterators stay behind the store's narrow API");

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void theImport_seesEveryCachePackage() {
    for (String pkg : List.of("cache", "cache.store", "cache.repair", "cache.ops", "cache.bundle", "cache.layout",
        "cache.remote", "cli")) {
      assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac." + pkg))).as(pkg).isNotEmpty();
    }
  }

  @Test
  void nothingOutsideTheCache_usesItsInternalPackages() {
    NOTHING_OUTSIDE_USES_INTERNALS.check(product);
  }

  @Test
  void nothingOutsideTheCache_usesTheRemoteTierButThroughItsDoor() {
    ONE_DOOR_FOR_BOTH_TIERS.check(product);
  }

  @Test
  void theStore_usesNeitherTheFacadeNorOpsBundlesOrLayouts() {
    STORE_DOES_NOT_CALL_UP.check(product);
  }

  @Test
  void theStore_doesNotUseRepair() {
    STORE_DOES_NOT_USE_REPAIR.check(product);
  }

  @Test
  void theCachePackages_formNoCircle() {
    NO_CYCLES_BETWEEN_CACHE_PACKAGES.check(product);
  }

  @Test
  void theCacheClasses_formNoCircleAcrossPackages() {
    NO_CLASS_CIRCLE_ACROSS_CACHE_PACKAGES.check(product);
  }

  @Test
  void onlyTheStore_touchesRocksDb() {
    ONLY_STORE_TOUCHES_ROCKSDB.check(product);
  }

  @Test
  void layouts_useOnlyTheFacade() {
    LAYOUTS_USE_THE_FACADE.check(product);
  }

  @Test
  void theRemoteTier_usesOnlyTheFacade_andAloneTalksToS3() {
    REMOTE_USES_THE_FACADE.check(product);
    ONLY_REMOTE_TOUCHES_S3.check(product);
  }

  @Test
  void eachRule_reportsAClassThatBreaksIt() {
    assertThatThrownBy(() -> ONLY_REMOTE_TOUCHES_S3.check(new ClassFileImporter().importClasses(TalksToS3.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(TalksToS3.class.getName());
    assertThatThrownBy(() -> REMOTE_USES_THE_FACADE.check(
        new ClassFileImporter().importClasses(ReachesTheStore.class, Store.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(ReachesTheStore.class.getName());
    // This test class names Store: from outside the cache, that is reaching past the facade.
    assertThatThrownBy(() -> NOTHING_OUTSIDE_USES_INTERNALS.check(
        new ClassFileImporter().importClasses(CacheRulesTest.class, Store.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CacheRulesTest.class.getName());
    // A class outside the cache opening the S3 side itself, not through the door.
    assertThatThrownBy(() -> ONE_DOOR_FOR_BOTH_TIERS.check(
        new ClassFileImporter().importClasses(OpensTheRemoteTierItself.class, RemoteTier.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(OpensTheRemoteTierItself.class.getName());
    // A store-side class calling up into the facade.
    assertThatThrownBy(() -> STORE_DOES_NOT_CALL_UP.check(
        new ClassFileImporter().importClasses(CallsUp.class, CacheStore.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CallsUp.class.getName());
    // A store-side class calling into the repair package built on it.
    assertThatThrownBy(() -> STORE_DOES_NOT_USE_REPAIR.check(
        new ClassFileImporter().importClasses(CallsRepair.class, CacheVerifier.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CallsRepair.class.getName());
    // Two classes in two cache packages that call each other.
    assertThatThrownBy(() -> NO_CYCLES_BETWEEN_CACHE_PACKAGES.check(
        new ClassFileImporter().importClasses(CircleOut.class, CircleBack.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CircleOut.class.getName())
        .hasMessageContaining(CircleBack.class.getName());
    assertThatThrownBy(() -> NO_CLASS_CIRCLE_ACROSS_CACHE_PACKAGES.check(
        new ClassFileImporter().importClasses(CircleOut.class, CircleBack.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CircleBack.class.getName() + ", "
            + CircleOut.class.getName());
    // A layout-side class naming the store and a RocksDB type.
    JavaClasses reachesPast = new ClassFileImporter().importClasses(ReachesPast.class, Store.class);
    assertThatThrownBy(() -> LAYOUTS_USE_THE_FACADE.check(reachesPast))
        .isInstanceOf(AssertionError.class).hasMessageContaining(ReachesPast.class.getName());
    assertThatThrownBy(() -> ONLY_STORE_TOUCHES_ROCKSDB.check(reachesPast))
        .isInstanceOf(AssertionError.class).hasMessageContaining("org.rocksdb.RocksDB");
  }

  /**
   * Top-level classes (nested ones count as their outermost class) that reach one another through classes of more
   * than one package: the strongly connected components of the classes checked, those that span packages reported once,
   * at their first class.
   */
  private static final class NotInACircleAcrossPackages extends ArchCondition<JavaClass> {
    private final Map<String, Set<String>> circleOf = new HashMap<>();

    NotInACircleAcrossPackages() {
      super("not be in a circle of classes that spans packages");
    }

    @Override
    public void init(Collection<JavaClass> all) {
      Map<String, Set<String>> edges = new TreeMap<>();
      for (JavaClass c : all) {
        Set<String> to = edges.computeIfAbsent(topLevel(c), k -> new TreeSet<>());
        for (Dependency d : c.getDirectDependenciesFromSelf()) {
          to.add(topLevel(d.getTargetClass()));
        }
      }
      edges.values().forEach(to -> to.retainAll(edges.keySet()));
      for (Set<String> component : new Components(edges).all) {
        if (component.stream().map(CacheRulesTest::packageOf).distinct().count() > 1) {
          component.forEach(c -> circleOf.put(c, component));
        }
      }
    }

    @Override
    public void check(JavaClass c, ConditionEvents events) {
      Set<String> circle = circleOf.get(topLevel(c));
      if (circle != null && c.getName().equals(circle.iterator().next())) {
        events.add(SimpleConditionEvent.violated(c, "classes that reach one another across packages: "
            + String.join(", ", circle)));
      }
    }

    private static String topLevel(JavaClass c) {
      String name = c.getName();
      int nested = name.indexOf('$');
      return nested < 0 ? name : name.substring(0, nested);
    }
  }

  private static String packageOf(String className) {
    return className.substring(0, className.lastIndexOf('.'));
  }

  /** Tarjan's strongly connected components of a graph, each sorted. */
  private static final class Components {
    final List<Set<String>> all = new java.util.ArrayList<>();
    private final Map<String, Set<String>> edges;
    private final Map<String, Integer> index = new HashMap<>();
    private final Map<String, Integer> low = new HashMap<>();
    private final Deque<String> stack = new ArrayDeque<>();
    private final Set<String> onStack = new java.util.HashSet<>();

    Components(Map<String, Set<String>> edges) {
      this.edges = edges;
      for (String v : edges.keySet()) {
        if (!index.containsKey(v)) {
          visit(v);
        }
      }
    }

    private void visit(String v) {
      index.put(v, index.size());
      low.put(v, index.get(v));
      stack.push(v);
      onStack.add(v);
      for (String w : edges.get(v)) {
        if (!index.containsKey(w)) {
          visit(w);
          low.put(v, Math.min(low.get(v), low.get(w)));
        } else if (onStack.contains(w)) {
          low.put(v, Math.min(low.get(v), index.get(w)));
        }
      }
      if (low.get(v).equals(index.get(v))) {
        Set<String> component = new TreeSet<>();
        String w;
        do {
          w = stack.pop();
          onStack.remove(w);
          component.add(w);
        } while (!w.equals(v));
        all.add(component);
      }
    }
  }
}
