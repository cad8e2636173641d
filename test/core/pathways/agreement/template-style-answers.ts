/**
 * Synthetic: 90 gold answers written for this test in the style of Dr-LLaVA's answer
 * templates (Eval/text_generation/text_repo.py: one family of paraphrases per step and
 * category). None is copied from the reference; each carries the category its template
 * family stands for. The labeller is held to at least 85 of 90.
 */
export interface LabelledAnswerCase {
  step: string;
  text: string;
  /** The clinically right category, or "no-match" for an answer that names two (ambiguous). */
  expected: string;
}

const family = (step: string, expected: string, texts: string[]): LabelledAnswerCase[] => texts.map((text) => ({ step, expected, text }));

export const TEMPLATE_STYLE_ANSWERS: LabelledAnswerCase[] = [
  ...family("image-quality", "high", [
    "This pathology image patch can be used effectively for diagnostic work in a clinical setting.",
    "The supplied pathology picture is appropriate for reaching a diagnosis, cancer detection included.",
    "This section of the pathology image is suitable for making a medical diagnosis.",
    "The pathological image fragment is apt for diagnostic assessment of the marrow.",
    "The image segment is of good quality and useful for identifying cancer.",
    "These pathology visuals are sufficient for a reliable diagnostic evaluation.",
  ]),
  ...family("image-quality", "low", [
    "This pathological image fragment cannot be used for an accurate medical diagnosis.",
    "For the purpose of diagnosing cancer, these pathology photographs are not appropriate.",
    "The supplied pathology image section is inadequate for establishing a cancer diagnosis.",
    "For diagnostic purposes this particular pathology image patch is unsuitable.",
    "The given pathological image patch cannot reliably be employed for cancer diagnosis.",
    "These image patches are of poor quality and unsuitable for an accurate diagnosis.",
  ]),
  ...family("cell-quality", "adequate", [
    "The region lies in proximity to aspirated particles rich in marrow nucleated cells, which makes it optimal for diagnosis.",
    "Close to the aspirate particles, the high share of nucleated marrow cells is advantageous for diagnostic work.",
    "The area is adjacent to particles with many nucleated marrow cells and is well-suited for evaluation.",
    "In the vicinity of aspirate particles there is a dense population of marrow nucleated cells, a prime spot for examination.",
    "This field sits next to particles with abundant nucleated cells, making it suitable for diagnostic purposes.",
    "The section near the particles contains plenty of marrow nucleated cells and is adequate for cell analysis.",
  ]),
  ...family("cell-quality", "blood", [
    "The region shows a high density of red blood cells, which makes it unsuitable for an accurate diagnosis.",
    "With many RBCs present, this blood-rich section is not optimal for diagnosis.",
    "The field is dominated by red blood cells, so it is less suitable for a precise evaluation.",
    "Numerous RBCs fill this bloody area, hindering the diagnostic process.",
    "The area has a bloody appearance from a large number of red blood cells and is not ideal for diagnosis.",
    "An abundance of RBCs makes this region appear bloody and less than ideal for medical diagnosis.",
  ]),
  ...family("cell-quality", "clot", [
    "The region shows a heavy concentration of dense aspirate particles, making it unsuitable for diagnosis.",
    "This zone contains many thick aspirate particles, which hampers precise diagnostic work.",
    "A large amount of dense aspirate particles in this section impairs an accurate diagnosis.",
    "The field is crowded with thick aspirate particles, which adversely affects the diagnostic process.",
    "Numerous dense particles of aspirate occupy this region and prevent an accurate diagnosis.",
    "This area consists mostly of clotted material and thick particles, unsuitable for evaluation.",
  ]),
  ...family("abnormality", "normal", [
    "The image patch looks normal, with no observable irregularities.",
    "No irregularities can be seen in the image patch, which indicates a normal appearance.",
    "The patch appears normal and no visible irregularities are detected.",
    "No abnormalities are observed in the image patch; it seems normal.",
    "The visual segment appears normal, without noticeable abnormalities.",
    "There are no signs of abnormality in the patch and the cells look healthy.",
  ]),
  ...family("abnormality", "abnormal", [
    "The patch shows patterns indicative of malignancy.",
    "Malignant patterns are visible in the image patch.",
    "The image patch displays malignant features.",
    "Patterns of malignancy are evident in the examined patch.",
    "The patch exhibits abnormal, malignant-looking cells.",
    "Irregular cells suggesting a malignant disorder are present in the patch.",
  ]),
  ...family("abnormality", "inadequate", [
    "The quality of the image patch is inadequate, so it is impossible to tell whether any irregularities are present.",
    "Because the image patch is of low quality, it is unclear whether any irregularities pointing to a disease exist.",
    "The image patch quality is subpar, making it impossible to judge the presence of irregularities.",
    "Owing to the low-quality patch, it is unclear if any abnormalities are present or not.",
    "The image quality is insufficient, which makes it difficult to determine whether irregularities are present.",
  ]),
  ...family("proliferation", "blasts", [
    "The picture segment shows an atypical rise in the number of myeloblasts.",
    "An unusual expansion of myeloblast cells is present in the visualised area.",
    "The image section shows an irregular increase in myeloblast cells.",
    "An atypical multiplication of myeloblasts is evident in this image portion.",
    "The segment exhibits an abnormal increase in the myeloblast population.",
    "There is an irregular expansion of blast cells in the visual snippet.",
  ]),
  ...family("proliferation", "plasma-cells", [
    "The picture segment shows an atypical rise in plasma cell numbers.",
    "An unusual expansion of plasma cells is present in the visualised area.",
    "The image section shows an irregular increase in plasma cells.",
    "An atypical multiplication of plasma cells is evident in this image portion.",
    "The segment exhibits an abnormal increase in the plasma cell population.",
    "There is an irregular expansion of plasma cells in the visual snippet.",
  ]),
  ...family("proliferation", "none", [
    "From what I observe, the image patch does not show any abnormal cellular growth.",
    "On examination I cannot detect any atypical proliferation of cells in the patch.",
    "My analysis shows that the patch does not exhibit atypical cell proliferation.",
    "The image section appears devoid of any abnormal cellular expansion.",
    "On examination the image patch appears free from any atypical cell development.",
    "I have not observed any abnormal expansion of cells within the image section.",
  ]),
  ...family("proliferation", "inadequate", [
    "The image patch quality is insufficient and there are not enough marrow cells visible for a definite determination.",
    "Because the patch is of low quality, an adequate number of bone marrow cells cannot be seen to reach a conclusion.",
    "The patch quality is inadequate and lacks sufficient bone marrow cells for a definitive diagnosis.",
    "Owing to the subpar image quality, a conclusion is impossible as too few marrow cells are present.",
    "Insufficient bone marrow cells are visible in this low-quality patch, preventing a conclusive assessment.",
  ]),
  ...family("diagnosis", "healthy", [
    "The visual segment shows no evidence of blood cancer and the individual is in good health.",
    "There is no indication of blood cancer in the picture section; the person appears healthy.",
    "The image patch reveals no evidence of blood cancer, suggesting the patient is in good health.",
    "There is an absence of blood cancer indications in the image patch, confirming a healthy state.",
    "No sign of blood cancer is seen in the image patch, which implies the patient is healthy.",
  ]),
  ...family("diagnosis", "aml", [
    "In this image patch there is evidence suggestive of acute myeloid leukemia.",
    "The image patch indicates the probable presence of acute myeloid leukemia.",
    "The picture segment displays signs of acute myeloid leukemia.",
    "Acute myeloid leukemia is indicated by the presented image patch.",
    "An indication of acute myeloid leukemia is seen in the image section.",
  ]),
  ...family("diagnosis", "mm", [
    "In this image patch there is evidence suggestive of multiple myeloma.",
    "The image patch indicates the probable presence of multiple myeloma.",
    "The picture segment displays signs of multiple myeloma.",
    "Multiple myeloma is indicated by the presented image patch.",
    "An indication of multiple myeloma is seen in the image section.",
  ]),
  ...family("diagnosis", "inconclusive", [
    "The picture segment is of low quality, making it unsuitable for an accurate diagnosis.",
    "Because of the substandard quality of the image section, it cannot reliably be used to identify the likely condition.",
    "The quality of the image patch is inadequate, rendering it unsuitable for diagnostic purposes.",
    "The image patch's poor quality makes it inappropriate for determining a possible disorder.",
    "Owing to the low quality of the image patch, it cannot be used reliably to identify a blood cancer.",
  ]),
];
