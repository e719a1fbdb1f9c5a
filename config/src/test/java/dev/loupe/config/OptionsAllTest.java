package dev.loupe.config;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Options.ALL} is what help, the YAML loader and the generated docs are made from, so an option declared in
 * {@code Options} but left out of it would exist for no command. Every static {@code Option} field (found by
 * reflection) is in ALL, and ALL holds each option once and nothing else.
 */
class OptionsAllTest {
    @Test
    void everyDeclaredOptionIsInAllOnce() throws IllegalAccessException {
        Map<Option<?>, String> declared = new IdentityHashMap<>();
        for (Field f : Options.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && Option.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                Option<?> o = (Option<?>) f.get(null);
                assertTrue(o != null, f.getName() + " is null");
                String before = declared.put(o, f.getName());
                assertTrue(before == null, f.getName() + " is the same option as " + before);
            }
        }
        assertTrue(declared.size() >= 10, "reflection found too few options: " + declared.values());

        Set<Option<?>> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        List<String> twice = new ArrayList<>();
        List<String> undeclared = new ArrayList<>();
        for (Option<?> o : Options.ALL) {
            String name = declared.getOrDefault(o, String.valueOf(o));
            if (!seen.add(o)) {
                twice.add(name);
            }
            if (!declared.containsKey(o)) {
                undeclared.add(name);
            }
        }
        List<String> missing = new ArrayList<>();
        declared.forEach((o, name) -> {
            if (!seen.contains(o)) {
                missing.add(name);
            }
        });
        Collections.sort(missing);
        assertEquals(List.of(), List.of(missing, twice, undeclared).stream().flatMap(List::stream).toList(),
                "Options.ALL: declared but missing " + missing + ", listed twice " + twice + ", not a field of Options "
                        + undeclared);
    }
}
