/**
 * Ids of responses and of their items. A response is "resp_" + 24 random characters (its stem);
 * every item it stores carries the same stem ("msg_<stem>o0", "fc_<stem>o1", "msg_<stem>i0" …), so
 * an `item_reference` is resolved by reading one response, found by primary key, without an index
 * over the items of every stored response.
 */
import { randomId } from "../../ids.ts";

const STEM = 24;

export function newResponseId(): { id: string; stem: string } {
  const id = randomId("resp", STEM);
  return { id, stem: id.slice("resp_".length) };
}

/** "msg_<stem>o0": prefix by item type, `o` for output items and `i` for input items, then the position. */
export type ItemPrefix = "msg" | "fc" | "rs" | "fco" | "ctc" | "ctco" | "at";
export const itemId = (prefix: ItemPrefix, stem: string, where: "o" | "i", index: number) => `${prefix}_${stem}${where}${index}`;

/** The response an item id was made for, or null for ids reelay did not make. */
export function responseIdOfItem(id: string): string | null {
  const m = /^[a-z]+_([0-9A-Za-z]{24})[oi]\d+$/.exec(id);
  return m ? `resp_${m[1]}` : null;
}
