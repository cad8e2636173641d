import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { defaultRedisPrefix, deploymentId, storeLocation } from "../../src/core/deployment-identity.js";

/** The deployment a process belongs to is its store: the default Redis prefix and the job tag come from it. */
describe("deployment identity", () => {
  const pg = (url: string) => ({ databaseUrl: url, dataDir: "./data" });

  it("is the store's location without credentials or connection settings", () => {
    expect(storeLocation(pg("postgres://medmmv:s3cret@DB.example:5432/cases?sslmode=require"))).toBe("postgres://db.example:5432/cases");
    expect(storeLocation(pg("postgresql://other:pw@db.example/cases"))).toBe("postgres://db.example:5432/cases");
    expect(storeLocation(pg("host=/run/pg dbname=cases password=s3cret"))).not.toContain("s3cret");
    expect(storeLocation({ databaseUrl: null, dataDir: "/srv/medmmv/data" })).toBe("sqlite:/srv/medmmv/data");
  });

  it("is one id for every replica of a store (whoever logs in) and another for another store", () => {
    const a = deploymentId(pg("postgres://a:1@db.example:5432/cases"));
    expect(deploymentId(pg("postgres://b:2@db.example:5432/cases?application_name=x"))).toBe(a);
    expect(deploymentId(pg("postgres://a:1@db.example:5432/other"))).not.toBe(a);
    expect(deploymentId(pg("postgres://a:1@db2.example:5432/cases"))).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
  });

  it("is resolved as the driver resolves it: two URLs that read alike, databases from PGDATABASE, are two stores", () => {
    const url = "postgres://medmmv:pw@db.example:5432";
    const a = loadConfig({ DATABASE_URL: url, PGDATABASE: "cases_a" }).engine;
    const b = loadConfig({ DATABASE_URL: url, PGDATABASE: "cases_b" }).engine;
    expect(a.prefix).not.toBe(b.prefix);
    expect(a.deployment).not.toBe(b.deployment);
    // the database named in the URL wins over PGDATABASE, as in the driver
    expect(loadConfig({ DATABASE_URL: `${url}/cases`, PGDATABASE: "cases_a" }).engine.prefix).toBe(loadConfig({ DATABASE_URL: `${url}/cases` }).engine.prefix);
    // no database anywhere: the user's name is the database
    expect(storeLocation(pg("postgres://alice@db.example"), {})).toBe("postgres://db.example:5432/alice");
    expect(storeLocation(pg("postgres:///cases"), { PGHOST: "db-b.example", PGPORT: "6432" })).toBe("postgres://db-b.example:6432/cases");
    expect(storeLocation(pg("postgres:///cases"), { PGHOST: "db-a.example" })).not.toBe(storeLocation(pg("postgres:///cases"), { PGHOST: "db-b.example" }));
  });

  it("gives the default MEDMMV_REDIS_PREFIX; a configured one wins", () => {
    const derived = loadConfig({ MEDMMV_DATA_DIR: "/srv/a" }).engine;
    expect(derived.prefix).toBe(defaultRedisPrefix({ databaseUrl: null, dataDir: "/srv/a" }));
    expect(derived.prefix).toMatch(/^medmmv-[0-9a-f]{12}$/);
    expect(loadConfig({ MEDMMV_DATA_DIR: "/srv/b" }).engine.prefix).not.toBe(derived.prefix);
    const set = loadConfig({ MEDMMV_DATA_DIR: "/srv/a", MEDMMV_REDIS_PREFIX: "prod-eu" }).engine;
    expect(set.prefix).toBe("prod-eu");
    expect(set.deployment).toBe(derived.deployment);
  });
});
