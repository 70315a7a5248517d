export declare const SOURCE_CONDITION: '@pixhook/source';
export declare const serverConditions: string[];
export declare const clientConditions: string[];
