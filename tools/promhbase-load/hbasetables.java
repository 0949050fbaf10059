// hbasetables.java: the HBase admin steps of `promhbase-load disk
// --systems=promhbase-hbase` that gohbase lacks. The Go command embeds
// this file, writes it into its work directory and runs it with the JDK's
// single-file source launcher (JDK 11+) against HBase's jars and the
// configuration directory of the HBase (tools/scripts/hbase.sh's .run/hbase/conf),
// -Dpromhbase.zookeeper.quorum=HOST:PORT overriding its quorum:
//
//   java -cp "CONF:LIB/*:CODECS/*" hbasetables.java compact TIMEOUT_SECONDS TABLE...
//   java -cp ... hbasetables.java compress CODEC TABLE...
//   java -cp ... hbasetables.java drop TABLE...
//
// compact flushes every TABLE, asks for a major compaction of each and
// waits until each has none running (compaction state NONE, after one was
// seen running or the table's last major compaction is later than the
// request) and every store of every region holds at most one file; then it
// prints one line a table on stdout: "TABLE REGIONS STORES STOREFILES
// STOREFILE_BYTES" as the region servers report them. compress sets the
// compression of every family of every TABLE to CODEC (the region servers
// reopen the regions; files are rewritten by the next compaction). drop
// disables and deletes every TABLE that exists. Progress goes to stderr.
// Exit status: 0 done, 1 failed, 2 usage.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.io.compress.Compression;

public class HBaseTables {
  public static void main(String[] args) {
    if (args.length < 2) {
      usage();
    }
    String mode = args[0];
    try (Connection c = connect(); Admin admin = c.getAdmin()) {
      switch (mode) {
        case "compact":
          {
            if (args.length < 3) {
              usage();
            }
            long timeoutMs = Long.parseLong(args[1]) * 1000;
            List<TableName> tables = tables(args, 2);
            compact(admin, tables, timeoutMs);
            break;
          }
        case "compress":
          {
            if (args.length < 3) {
              usage();
            }
            Compression.Algorithm codec = Compression.getCompressionAlgorithmByName(args[1].toLowerCase());
            for (TableName t : tables(args, 2)) {
              for (ColumnFamilyDescriptor f : admin.getDescriptor(t).getColumnFamilies()) {
                System.err.println("hbasetables: " + t + ":" + f.getNameAsString() + " compression " + f.getCompressionType() + " -> " + codec);
                admin.modifyColumnFamily(t, ColumnFamilyDescriptorBuilder.newBuilder(f).setCompressionType(codec).build());
              }
            }
            break;
          }
        case "drop":
          for (TableName t : tables(args, 1)) {
            if (!admin.tableExists(t)) {
              continue;
            }
            if (admin.isTableEnabled(t)) {
              admin.disableTable(t);
            }
            admin.deleteTable(t);
            System.err.println("hbasetables: dropped " + t);
          }
          break;
        default:
          usage();
      }
    } catch (Exception e) {
      System.err.println("hbasetables: " + mode + ": " + e);
      System.exit(1);
    }
  }

  private static void usage() {
    System.err.println(
        "usage: hbasetables.java compact TIMEOUT_SECONDS TABLE... | compress CODEC TABLE... | drop TABLE...");
    System.exit(2);
  }

  private static List<TableName> tables(String[] args, int from) {
    List<TableName> out = new ArrayList<>();
    for (int i = from; i < args.length; i++) {
      out.add(TableName.valueOf(args[i]));
    }
    return out;
  }

  private static Connection connect() throws Exception {
    Configuration conf = HBaseConfiguration.create();
    String quorum = System.getProperty("promhbase.zookeeper.quorum", "");
    if (!quorum.isEmpty()) {
      conf.set("hbase.zookeeper.quorum", quorum);
    }
    // Fail within seconds, not the client's default of minutes, when
    // HBase is down.
    conf.setInt("hbase.client.retries.number", 5);
    conf.setInt("zookeeper.recovery.retry", 1);
    return ConnectionFactory.createConnection(conf);
  }

  // compact flushes and major-compacts the tables, then waits for them.
  private static void compact(Admin admin, List<TableName> tables, long timeoutMs) throws Exception {
    long requested = System.currentTimeMillis();
    for (TableName t : tables) {
      admin.flush(t);
      System.err.println("hbasetables: flushed " + t);
    }
    for (TableName t : tables) {
      admin.majorCompact(t);
      System.err.println("hbasetables: major compaction of " + t + " requested");
    }
    long deadline = requested + timeoutMs;
    for (TableName t : tables) {
      boolean seen = false;
      int calm = 0;
      long[] m = null;
      while (true) {
        CompactionState st = admin.getCompactionState(t);
        m = metrics(admin, t);
        long last = admin.getLastMajorCompactionTimestamp(t);
        if (st != CompactionState.NONE) {
          seen = true;
          calm = 0;
        } else if (m[2] <= m[1]) {
          calm++;
        } else {
          calm = 0;
        }
        // The region servers report their metrics every few seconds: three
        // quiet polls in a row after the compaction was seen, or fifteen
        // with no sign of it (nothing to compact).
        if (calm >= 3 && (seen || last >= requested) || calm >= 15) {
          break;
        }
        if (System.currentTimeMillis() > deadline) {
          throw new Exception("the major compaction of " + t + " did not end within " + timeoutMs / 1000 + "s (state " + st + ", " + m[2] + " files in " + m[1] + " stores)");
        }
        Thread.sleep(1000);
      }
      System.err.println("hbasetables: " + t + " compacted: " + m[0] + " regions, " + m[1] + " stores, " + m[2] + " store files, " + m[3] + " bytes");
      System.out.println(t.getNameAsString() + " " + m[0] + " " + m[1] + " " + m[2] + " " + m[3]);
    }
  }

  // metrics sums the region servers' report of the table's regions:
  // regions, stores, store files and the store files' bytes.
  private static long[] metrics(Admin admin, TableName t) throws Exception {
    long[] m = new long[4];
    for (ServerName sn : admin.getRegionServers()) {
      for (RegionMetrics r : admin.getRegionMetrics(sn, t)) {
        m[0]++;
        m[1] += r.getStoreCount();
        m[2] += r.getStoreFileCount();
        m[3] += (long) r.getStoreFileSize().get(org.apache.hadoop.hbase.Size.Unit.BYTE);
      }
    }
    return m;
  }
}
