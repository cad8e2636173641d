import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * What the Dockerfile must say for the image production needs (the image itself is checked by
 * `npm run image:check`, which needs a Docker daemon and is not part of npm test).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dockerfile = readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
const instructions = dockerfile
  .replace(/\\\n/g, " ")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));
const index = (re: RegExp) => instructions.findIndex((l) => re.test(l));

describe("Dockerfile", () => {
  it("has no `# syntax=` line (BuildKit would fetch that frontend from a registry)", () => {
    expect(dockerfile).not.toMatch(/^#\s*syntax\s*=/im);
  });

  it("is based on a supported Node LTS (22 or 24), in every stage", () => {
    const base = /^ARG NODE_IMAGE=node:(\d+)/m.exec(dockerfile)?.[1];
    expect(["22", "24"]).toContain(base);
    for (const from of instructions.filter((l) => l.startsWith("FROM "))) expect(from).toMatch(/^FROM \$\{NODE_IMAGE\} AS /);
  });

  it("builds the CLI's bundle in the image, as root, before `USER node`, and fails the build without it", () => {
    const build = index(/^RUN node bin\/medmmv\.js --version/);
    expect(build).toBeGreaterThan(index(/^COPY .* src \.\/src$/));
    expect(build).toBeLessThan(index(/^USER node$/));
    expect(instructions[build]).toMatch(/node_modules\/\.cache\/medmmv-cli\/\*\/main\.js/);
  });

  it("makes /data writable by group 0 as by its owner (arbitrary uids in group 0, OpenShift)", () => {
    const data = instructions[index(/^RUN mkdir -p \/data/)]!;
    expect(data).toMatch(/chown node:0 \/data/);
    expect(data).toMatch(/chmod g=u \/data/);
    expect(index(/^VOLUME \["\/data"\]$/)).toBeGreaterThan(-1);
  });
});
